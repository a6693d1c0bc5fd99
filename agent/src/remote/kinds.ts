// One offer to what serves it: the device's switches first (its word always wins), then the
// kind's own checks. Anything refused here never joins the stream: the agent tells the service
// why (POST .../refuse) and the user reads that reason.
import { preparePortForward } from "./port-forward.js";
import { prepareFileRead, prepareFileWrite } from "./files.js";
import { KINDS, refuse, type Offer, type Prepared, type SessionContext } from "./offer.js";
import { serveProcess, type ProcessSpec } from "./process-session.js";
import type { GuardedProcess } from "./processes.js";
import { ptyAvailable } from "./pty.js";
import { resolveRunAs, RunAsError, type RunAs } from "./run-as.js";

/** How a running session is ended from outside (the agent stops): registered while it runs. */
export type Register = (end: () => Promise<void> | void) => () => void;

function runAs(ctx: SessionContext): RunAs | string {
  try {
    return resolveRunAs(ctx.config.user);
  } catch (error) {
    if (error instanceof RunAsError) return error.message;
    throw error;
  }
}

export function prepareOffer(offer: Offer, ctx: SessionContext, register: Register): Prepared {
  const { config } = ctx;
  if (!config.enabled) return refuse("remote access is switched off on the device (remoteAccess.enabled: false)");
  if (!KINDS.includes(offer.kind)) return refuse(`kind ${String(offer.kind)}: this agent serves ${KINDS.join(", ")}`);
  const trackProcess = (process: GuardedProcess) => register(() => process.end("SIGHUP"));
  switch (offer.kind) {
    case "shell": {
      if (!config.shell) return refuse("the device's configuration switches the shell off (remoteAccess.shell: false)");
      if (!ptyAvailable()) return refuse("the device has no script(1) and stty to make a terminal with (install util-linux and coreutils)");
      const user = runAs(ctx);
      if (typeof user === "string") return refuse(user);
      const spec: ProcessSpec = { argv: [user.shell, "-l"], tty: true, cols: offer.cols, rows: offer.rows, user };
      return { run: (leg) => serveProcess(spec, leg, ctx, trackProcess) };
    }
    case "exec": {
      if (!config.exec) return refuse("the device's configuration switches exec off (remoteAccess.exec: false)");
      const argv = offer.command;
      if (!Array.isArray(argv) || argv.length === 0 || argv.some((word) => typeof word !== "string") || argv[0] === "") return refuse("command: the argv to run, a non-empty list of strings");
      if (offer.tty && !ptyAvailable()) return refuse("the device has no script(1) and stty to make a terminal with (install util-linux and coreutils)");
      const timeout = offer.timeoutSeconds ?? 0;
      if (!Number.isFinite(timeout) || timeout < 0) return refuse("timeoutSeconds: a number of seconds");
      const user = runAs(ctx);
      if (typeof user === "string") return refuse(user);
      const spec: ProcessSpec = { argv, tty: Boolean(offer.tty), cols: offer.cols, rows: offer.rows, timeoutSeconds: timeout, user };
      return { run: (leg) => serveProcess(spec, leg, ctx, trackProcess) };
    }
    case "port-forward":
      return preparePortForward(offer, ctx, register);
    case "file-read":
      return prepareFileRead(offer, ctx);
    case "file-write":
      return prepareFileWrite(offer, ctx);
  }
}
