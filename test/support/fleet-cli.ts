// The fleet CLI as a user runs it: cli/bin/fleet.js as a subprocess, with a home directory of
// its own (config in $XDG_CONFIG_HOME/fleet) and only PATH from the test's environment.
import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";
import { ROOT } from "./server-process.js";

export const FLEET_BIN = path.join(ROOT, "cli", "bin", "fleet.js");

export interface RunningFleet {
  child: ChildProcess;
  out(): string;
  err(): string;
  exited: Promise<number | null>;
}

/** The environment of a user whose home is `home`, plus `extra` (FLEET_URL, FLEET_TOKEN, ...). */
export function fleetEnv(home: string, extra: Record<string, string> = {}): Record<string, string> {
  return { PATH: process.env.PATH ?? "", HOME: home, XDG_CONFIG_HOME: path.join(home, ".config"), ...extra };
}

/** Starts `fleet ARGS`. `input`: what stdin gets before it ends; null keeps it open (a conversation). */
export function startFleet(env: Record<string, string>, args: string[], input?: Buffer | string | null): RunningFleet {
  const child = spawn(process.execPath, [FLEET_BIN, ...args], { env, stdio: ["pipe", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (c: Buffer) => (stdout += c.toString()));
  child.stderr!.on("data", (c: Buffer) => (stderr += c.toString()));
  if (input !== null) child.stdin!.end(input ?? "");
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  return { child, out: () => stdout, err: () => stderr, exited };
}

/** `fleet ARGS` to its end: exit code, stdout and stderr. */
export async function runFleet(env: Record<string, string>, args: string[], input?: Buffer | string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const run = startFleet(env, args, input);
  const code = await run.exited;
  return { code, stdout: run.out(), stderr: run.err() };
}
