// Device actions from the command line (docs/actions.md): fleet reboot DEVICE, fleet restart
// DEVICE APP (also stop, start), fleet diagnostics DEVICE -o file.tgz. Each creates an action
// (POST /device-actions) and, with --wait (diagnostics always), follows it until it ended. A
// reboot asks on a terminal and needs --yes off one.
import fs from "node:fs";
import type { Command } from "commander";
import { CliError, EXIT } from "../errors.js";
import { connect, consent, durationMs, idByName, pause, print, type Globals } from "../runtime.js";
import type { ApiClient } from "../client.js";
import type { Io } from "../main.js";

interface Action { id: string; kind: string; state: string; message: string | null; deviceName: string; deferredUntil: string | null; deferredBy: string | null; bundle: { sizeBytes: number } | null }
const FINAL = new Set(["succeeded", "failed", "expired", "cancelled"]);

async function create(client: ApiClient, body: Record<string, unknown>): Promise<Action> {
  return client.request<Action>("POST", "/device-actions", { body });
}

/** Polls the action until it ended (or the timeout); says when a lease defers it. */
async function follow(client: ApiClient, io: Io, action: Action, timeout: string): Promise<Action> {
  const deadline = Date.now() + durationMs(timeout, "--timeout");
  let said = "";
  for (;;) {
    const now = await client.request<Action>("GET", `/device-actions/${action.id}`);
    const line = now.state === "deferred" ? `deferred by ${now.deferredBy} until ${now.deferredUntil}` : now.state;
    if (line !== said) io.stderr.write(`${now.kind} on ${now.deviceName}: ${line}\n`);
    said = line;
    if (FINAL.has(now.state)) return now;
    if (Date.now() > deadline) throw new CliError(EXIT.error, `gave up after ${timeout}: the action is ${now.state}`);
    await pause(1000);
  }
}

function finish(io: Io, globals: Globals, action: Action): number | void {
  print(io, globals, action);
  return action.state === "succeeded" ? undefined : EXIT.error;
}

type Opts = { reason?: string; yes?: boolean; wait?: boolean; timeout: string; expires?: string; output?: string };

export async function reboot(args: unknown[], globals: Globals, io: Io, cmd: Command): Promise<number | void> {
  const opts = cmd.opts<Opts>();
  const { client } = await connect(globals, io);
  const deviceId = await idByName(client, "/devices", String(args[0]), "device");
  if (!(await consent(io, opts.yes, `Reboot ${args[0]}? [y/N] `, `rebooting ${args[0]}`))) {
    io.stderr.write("nothing done\n");
    return EXIT.error;
  }
  const action = await create(client, { deviceId, kind: "reboot", ...common(opts) });
  return opts.wait ? finish(io, globals, await follow(client, io, action, opts.timeout)) : print(io, globals, action);
}

/** fleet restart|stop|start DEVICE APP: APP is the deployment (id or name) whose application it acts on. */
export function onApplication(kind: "restart-app" | "stop-app" | "start-app") {
  return async (args: unknown[], globals: Globals, io: Io, cmd: Command): Promise<number | void> => {
    const opts = cmd.opts<Opts>();
    const { client } = await connect(globals, io);
    const deviceId = await idByName(client, "/devices", String(args[0]), "device");
    const deploymentId = await idByName(client, "/deployments", String(args[1]), "deployment");
    const action = await create(client, { deviceId, kind, deploymentId, ...common(opts) });
    return opts.wait ? finish(io, globals, await follow(client, io, action, opts.timeout)) : print(io, globals, action);
  };
}

/** fleet diagnostics DEVICE -o FILE: collects a bundle, waits for it and writes it to FILE. */
export async function diagnostics(args: unknown[], globals: Globals, io: Io, cmd: Command): Promise<number | void> {
  const opts = cmd.opts<Opts & { file: string }>();
  const { client } = await connect(globals, io);
  const deviceId = await idByName(client, "/devices", String(args[0]), "device");
  const done = await follow(client, io, await create(client, { deviceId, kind: "diagnostics", ...common(opts) }), opts.timeout);
  if (done.state !== "succeeded" || !done.bundle) return finish(io, globals, done);
  const res = await client.request<Response>("GET", `/device-actions/${done.id}/bundle`, { raw: true });
  const data = Buffer.from(await res.arrayBuffer());
  fs.writeFileSync(opts.file, data);
  io.stderr.write(`${data.length} bytes written to ${opts.file}\n`);
}

function common(opts: Opts) {
  return { ...(opts.reason ? { reason: opts.reason } : {}), ...(opts.expires ? { expiresInSeconds: Math.round(durationMs(opts.expires, "--expires") / 1000) } : {}) };
}
