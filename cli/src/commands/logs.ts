// fleet logs DEVICE [-f]: a device's log lines (GET /devices/{id}/logs), and with -f the live
// stream (GET /devices/{id}/logs/stream, Server-Sent Events), resumed after the last line seen
// (Last-Event-ID) when the connection drops.
import type { Command } from "commander";
import type { ApiClient } from "../client.js";
import { connect, durationMs, idByName, pause, print, type Globals } from "../runtime.js";
import type { Io } from "../main.js";

interface LogLine {
  id: string;
  timestamp: string;
  level: string;
  source: string;
  message: string;
}

const lineOf = (l: LogLine) => `${l.timestamp} ${l.level.toUpperCase().padEnd(5)} [${l.source}] ${l.message}\n`;

export async function logs(args: unknown[], globals: Globals, io: Io, cmd: Command): Promise<void> {
  const opts = cmd.opts<{ follow?: boolean; level?: string[]; source?: string; since?: string; tail: string }>();
  const since = opts.since ? new Date(Date.now() - durationMs(opts.since, "--since")) : null;
  const { client } = await connect(globals, io);
  const id = await idByName(client, "/devices", String(args[0]), "device");
  // log lines are text unless -o json|yaml asks otherwise (with -f: one JSON object per line)
  const structured = globals.output === "json" || globals.output === "yaml";
  const emit = (l: LogLine) => io.stdout.write(structured ? `${JSON.stringify(l)}\n` : lineOf(l));
  const filters = { source: opts.source, level: opts.level };
  if (!opts.follow) {
    const { items } = await client.all<LogLine>(`/devices/${id}/logs`, { ...filters, from: since?.toISOString() });
    if (structured) return print(io, globals, items.reverse());
    for (const line of items.reverse()) emit(line);
    return;
  }
  await follow(client, id, { ...filters, tail: opts.tail }, since, emit);
}

/** Reads the event stream until the process is stopped; reconnects after the last line seen. */
async function follow(client: ApiClient, id: string, query: Record<string, unknown>, since: Date | null, emit: (l: LogLine) => void): Promise<void> {
  let lastId: string | undefined;
  for (;;) {
    const res = await client.request<Response>("GET", `/devices/${id}/logs/stream`, {
      query,
      raw: true,
      headers: { accept: "text/event-stream", ...(lastId ? { "last-event-id": lastId } : {}) },
    });
    let buffered = "";
    const decoder = new TextDecoder();
    for await (const chunk of res.body ?? []) {
      buffered += decoder.decode(chunk as Uint8Array, { stream: true });
      let end: number;
      while ((end = buffered.indexOf("\n\n")) >= 0) {
        const event = buffered.slice(0, end);
        buffered = buffered.slice(end + 2);
        const fields = Object.fromEntries(event.split("\n").filter((l) => l && !l.startsWith(":")).map((l) => [l.slice(0, l.indexOf(":")), l.slice(l.indexOf(":") + 1).trimStart()]));
        if (fields.event !== "log" || !fields.data) continue;
        const line = JSON.parse(fields.data) as LogLine;
        lastId = fields.id ?? line.id;
        if (since && new Date(line.timestamp) < since) continue;
        emit(line);
      }
    }
    // the server closed the stream (restart, proxy timeout): resume after the last line
    await pause(1000);
  }
}
