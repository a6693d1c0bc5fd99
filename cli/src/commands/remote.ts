// fleet ssh DEVICE and fleet exec DEVICE -- argv...: a shell under a pty on the device, or one
// command with its stdout, stderr and exit code, through the service (docs/remote-access.md).
import type { Command } from "commander";
import { CliError, EXIT } from "../errors.js";
import type { Io } from "../main.js";
import { openSession } from "../remote/session.js";
import { pipeStdio } from "../remote/stdio.js";
import { windowSize, withRawTerminal } from "../remote/terminal.js";
import { connect, idByName, type Globals } from "../runtime.js";

export async function ssh(args: unknown[], globals: Globals, io: Io, cmd: Command): Promise<number> {
  const opts = cmd.opts<{ reason?: string }>();
  const { client } = await connect(globals, io);
  const deviceName = String(args[0]);
  const deviceId = await idByName(client, "/devices", deviceName, "device");
  const opened = await openSession(client, { deviceId, kind: "shell", tty: true, reason: opts.reason, ...windowSize(io) });
  return withRawTerminal(io, (raw) => pipeStdio(client, opened, io, { escape: true, raw, resize: true, leaving: `Connection to ${deviceName} closed.` }));
}

export async function exec(args: unknown[], globals: Globals, io: Io, cmd: Command): Promise<number> {
  const opts = cmd.opts<{ timeout?: string; tty?: boolean; reason?: string }>();
  const deviceName = String(args[0]);
  const command = (args[1] as string[] | undefined) ?? [];
  if (command.length === 0) throw new CliError(EXIT.usage, "fleet exec needs a command after --, e.g. fleet exec DEVICE -- uname -a");
  let timeoutSeconds: number | undefined;
  if (opts.timeout !== undefined) {
    timeoutSeconds = Number(opts.timeout);
    if (!Number.isInteger(timeoutSeconds) || timeoutSeconds < 1) throw new CliError(EXIT.usage, `--timeout takes whole seconds (1 or more), not "${opts.timeout}"`);
  }
  const { client } = await connect(globals, io);
  const deviceId = await idByName(client, "/devices", deviceName, "device");
  const tty = !!opts.tty;
  const opened = await openSession(client, { deviceId, kind: "exec", command, tty, timeoutSeconds, reason: opts.reason, ...(tty ? windowSize(io) : {}) });
  const run = (raw: boolean) => pipeStdio(client, opened, io, { escape: false, raw, resize: tty });
  return tty ? withRawTerminal(io, run) : run(false);
}
