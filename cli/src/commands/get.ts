// fleet get GROUP [--watch]: the list command of a group (any group whose module has a `list`
// procedure), and with --watch the same list redrawn whenever the realtime channel of that
// group reports a change (devices, deployments, alerts), or at each poll for the others.
import type { Command } from "commander";
import { CliError, EXIT } from "../errors.js";
import { loadManifest } from "../load-manifest.js";
import { render } from "../output.js";
import { watchLoop } from "../realtime.js";
import { connect, formatOf, pairs, print, type Globals } from "../runtime.js";
import type { Io } from "../main.js";

const CHANNELS: Record<string, string> = { devices: "devices", deployments: "deployments", alerts: "alerts" };

export async function get(args: unknown[], globals: Globals, io: Io, cmd: Command): Promise<void> {
  const group = String(args[0]);
  const manifest = loadManifest(io.env);
  const op = manifest.operations.find((o) => o.group === group && o.command === "list" && o.method === "GET" && o.args.length === 0);
  if (!op) {
    const listable = [...new Set(manifest.operations.filter((o) => o.command === "list" && o.args.length === 0).map((o) => o.group))].sort();
    throw new CliError(EXIT.usage, `nothing to get for "${group}": one of ${listable.join(", ")}`);
  }
  const opts = cmd.opts<{ watch?: boolean; selector?: string[]; all?: boolean; limit?: string; offset?: string }>();
  const query: Record<string, unknown> = {};
  if (opts.selector?.length) {
    if (!op.query.some((q) => q.name === "labels")) throw new CliError(EXIT.usage, `${group} cannot be selected by labels`);
    query.labels = Object.entries(pairs(opts.selector, "--selector")).map(([k, v]) => `${k}=${v}`).join(",");
  }
  if (opts.limit) query.limit = opts.limit;
  if (opts.offset) query.offset = opts.offset;
  const { client } = await connect(globals, io);
  const read = () => (opts.all && op.paged ? client.all(`${op.path}`, query) : client.request(op.method, op.path, { query }));
  if (!opts.watch) return print(io, globals, await read());
  const stop = new AbortController();
  const onSignal = () => stop.abort();
  process.once("SIGINT", onSignal);
  const tty = Boolean(io.stdout.isTTY);
  let last = "";
  try {
    await watchLoop(client, CHANNELS[group] ?? "devices", (e) => e.channel === (CHANNELS[group] ?? "none"), async () => {
      const text = render(await read(), formatOf(globals, io));
      if (text !== last) io.stdout.write(tty ? `\x1b[H\x1b[2J${text}\nWatching ${group}; Ctrl-C to stop. ${new Date().toLocaleTimeString()}\n` : `${text}\n`);
      last = text;
      return false;
    }, CHANNELS[group] ? 10_000 : 2_000, stop.signal);
  } finally {
    process.off("SIGINT", onSignal);
  }
}
