// Activation commands (docs/configuration.md, "On the device"): what a layer declares to run
// after its files changed (`systemctl reload mosquitto`). Run without a shell (the argv as
// given: no quoting, globbing or injection through a value), one at a time in the order the
// service listed them, each within a timeout; the first that fails fails the revision.
import { execFile } from "node:child_process";
import type { ActivationEntry } from "./types.js";

export interface ActivationResult {
  ran: string[];
  /** the failure, naming the layer, the command and its exit */
  failure?: string;
}

const text = (command: readonly string[]) => command.join(" ");

/** Runs one command; resolves with null when it exited 0, else with why not. */
function runOne(command: readonly string[], timeoutMs: number): Promise<string | null> {
  return new Promise((resolve) => {
    execFile(command[0], command.slice(1), { timeout: timeoutMs, killSignal: "SIGKILL", maxBuffer: 1024 * 1024, encoding: "utf8" }, (error, _stdout, stderr) => {
      if (!error) return resolve(null);
      const e = error as NodeJS.ErrnoException & { killed?: boolean; code?: number | string; signal?: string | null };
      const said = (stderr || "").trim().split("\n").slice(-5).join(" / ").slice(0, 500);
      if (typeof e.code === "string") resolve(`cannot be run (${e.code})`);
      else if (e.killed || e.signal === "SIGKILL") resolve(`did not finish within ${timeoutMs / 1000} s and was stopped`);
      else if (e.signal) resolve(`ended by ${e.signal}${said ? `: ${said}` : ""}`);
      else resolve(`exited with ${e.code}${said ? `: ${said}` : ""}`);
    });
  });
}

/** The activations of the layers whose paths are among `changed`, each run in turn until one fails. */
export async function runActivations(activations: readonly ActivationEntry[], changed: readonly string[], timeoutMs: number): Promise<ActivationResult> {
  const touched = new Set(changed);
  const ran: string[] = [];
  for (const activation of activations) {
    if (!activation.paths.some((p) => touched.has(p))) continue;
    if (!Array.isArray(activation.command) || !activation.command.length || activation.command.some((a) => typeof a !== "string")) {
      return { ran, failure: `activation of layer ${activation.layer}: the command is not a list of arguments` };
    }
    const why = await runOne(activation.command, timeoutMs);
    if (why) return { ran, failure: `activation of layer ${activation.layer} (${text(activation.command)}) ${why}` };
    ran.push(activation.layer);
  }
  return { ran };
}
