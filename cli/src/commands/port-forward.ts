// fleet port-forward DEVICE LOCAL:[HOST:]REMOTE: listens on 127.0.0.1:LOCAL and carries each
// accepted connection to HOST:REMOTE as the device reaches it (HOST defaults to the device's
// loopback), each connection on a stream of its own with its own ticket (contract: one per TCP
// connection), as many at once as come.
import net from "node:net";
import type { Command } from "commander";
import { CliError, EXIT } from "../errors.js";
import type { Io } from "../main.js";
import { carry } from "../remote/forward.js";
import { connectionTicket, endedSession, endReasonText, openSession, openStream, type Opened } from "../remote/session.js";
import { connect, idByName, type Globals } from "../runtime.js";

export interface ForwardSpec {
  localPort: number;
  host: string;
  remotePort: number;
}

const port = (text: string, what: string, allowZero = false): number => {
  const n = Number(text);
  if (!/^\d+$/.test(text) || n > 65535 || n < (allowZero ? 0 : 1)) throw new CliError(EXIT.usage, `${what} must be a port number (${allowZero ? 0 : 1}-65535), not "${text}"`);
  return n;
};

/** LOCAL:REMOTE or LOCAL:HOST:REMOTE (a host of the device's network, [IPv6] in brackets). */
export function parseForward(spec: string): ForwardSpec {
  const m = /^(\d+):(?:(\[[^\]]+\]|[^:]+):)?(\d+)$/.exec(spec);
  if (!m) throw new CliError(EXIT.usage, `the forward is LOCAL:REMOTE or LOCAL:HOST:REMOTE (e.g. 8080:80, 8080:10.0.0.5:80), not "${spec}"`);
  return { localPort: port(m[1], "LOCAL", true), host: m[2] ? m[2].replace(/^\[|\]$/g, "") : "127.0.0.1", remotePort: port(m[3], "REMOTE") };
}

/** How long a ticket from the service stays usable (contract: 30 s), with a margin. */
const TICKET_FRESH_MS = 20_000;

export async function portForward(args: unknown[], globals: Globals, io: Io, cmd: Command): Promise<number> {
  const opts = cmd.opts<{ reason?: string; address?: string }>();
  const spec = parseForward(String(args[1]));
  const { client } = await connect(globals, io);
  const deviceName = String(args[0]);
  const deviceId = await idByName(client, "/devices", deviceName, "device");
  // the session first: a refusal (permission, remote access off, device offline) says so before anything listens
  const opened: Opened = await openSession(client, { deviceId, kind: "port-forward", target: { host: spec.host, port: spec.remotePort }, reason: opts.reason });
  let firstTicket: { streamUrl: string; at: number } | null = { streamUrl: opened.streamUrl, at: Date.now() };
  const ticketFor = async () => {
    if (firstTicket && Date.now() - firstTicket.at < TICKET_FRESH_MS) {
      const { streamUrl } = firstTicket;
      firstTicket = null;
      return streamUrl;
    }
    firstTicket = null;
    return (await connectionTicket(client, opened.session.id)).streamUrl;
  };

  let sessionEnded: ((code: number) => void) | null = null;
  const ended = new Promise<number>((resolve) => (sessionEnded = resolve));
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
    void carry(socket, async (onFrame) => openStream(client, await ticketFor(), onFrame))
      .then((carried) => {
        if (carried.error) io.stderr.write(`error: connection to ${spec.host}:${spec.remotePort} refused by the device: ${carried.error}\n`);
      })
      .catch(async (err: Error) => {
        // no more tickets: the session is over (closed, timed out, the device gone)
        const session = await endedSession(client, opened.session.id).catch(() => null);
        if (session?.state === "ended") {
          io.stderr.write(`error: ${endReasonText(session.endReason)}\n`);
          sessionEnded?.(255);
        } else io.stderr.write(`error: ${err.message}\n`);
      });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", (err: NodeJS.ErrnoException) => reject(new CliError(EXIT.error, `cannot listen on 127.0.0.1:${spec.localPort}: ${err.code ?? err.message}`)));
    server.listen(spec.localPort, "127.0.0.1", () => resolve());
  });
  const local = (server.address() as net.AddressInfo).port;
  // on stdout, as kubectl port-forward says it: a script that asked for port 0 reads the port here
  io.stdout.write(`Forwarding from 127.0.0.1:${local} -> ${spec.host}:${spec.remotePort} on ${deviceName} (Ctrl-C stops)\n`);

  const stop = () => sessionEnded?.(0);
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
  const code = await ended;
  process.off("SIGINT", stop);
  process.off("SIGTERM", stop);
  server.close();
  for (const socket of sockets) socket.destroy();
  await client.request("POST", `/remote-sessions/${opened.session.id}/close`).catch(() => undefined);
  return code;
}
