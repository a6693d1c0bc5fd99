// `fleet jobs create` as a user runs it (the CLI as a subprocess against a real service
// process with simulated devices that run the actions they are handed through the agent
// protocol): --wait exits 0 once the job completed and 8 when its failure threshold paused
// it; a disruptive kind off a terminal needs --yes (nothing created without it); a paused job
// is resumed and cancelled by the generated commands.
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADMIN, startConsoleService, type ConsoleService, type SimulatedFleet } from "../support/console-service.js";
import { ROOT } from "../support/server-process.js";
import { runHandedActions } from "../support/device-actions.js";

const BIN = path.join(ROOT, "cli", "bin", "fleet.js");

let service: ConsoleService;
let mill: SimulatedFleet;
let dir: string;

function fleet(args: string[], input = ""): { exited: Promise<{ code: number | null; stdout: string; stderr: string }> } {
  const env = { PATH: process.env.PATH ?? "", HOME: dir, XDG_CONFIG_HOME: path.join(dir, ".config") };
  const child = spawn(process.execPath, [BIN, ...args], { env, stdio: ["pipe", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
  child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
  child.stdin.end(input);
  return { exited: new Promise((resolve) => child.once("exit", (code) => resolve({ code, stdout, stderr }))) };
}

/** The devices run what they are handed until the command ended. */
async function drive<T>(run: Promise<T>, state: "succeeded" | "failed"): Promise<T> {
  let done = false;
  void run.finally(() => (done = true));
  while (!done) {
    await runHandedActions(mill.devices, state);
    await Promise.race([run, new Promise((r) => setTimeout(r, 200))]);
  }
  return run;
}

beforeAll(async () => {
  service = await startConsoleService();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "fleet-cli-jobs-"));
  mill = await service.enrollFleet({ prefix: "mill", devices: 3, labels: { site: "mill" } });
  const login = await fleet(["login", service.url, "--email", ADMIN.email, "--password-stdin", "--name", "local"], `${ADMIN.password}\n`).exited;
  expect(login.code, login.stderr).toBe(0);
}, 180_000);

afterAll(async () => {
  await service?.close();
});

describe("fleet jobs create", () => {
  it("--wait exits 0 once the job completed, saying its progress by lines", async () => {
    const run = await drive(fleet(["jobs", "create", "check-health", "--selector", "site=mill", "--canary", "1", "--batches", "100%", "--reason", "weekly check", "--wait", "--timeout", "60s", "-o", "json"]).exited, "succeeded");
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ kind: "check-health", state: "completed", reason: "weekly check", eligible: 3, counts: { succeeded: 3 } });
    expect(run.stderr).toMatch(/^job [0-9a-f-]{36}: check-health over 3 devices \(0 skipped\)$/m);
    expect(run.stderr).toContain("in_progress · canary: 0 succeeded, 0 failed or expired, 1 in flight, 2 queued");
  });

  it("a disruptive kind off a terminal needs --yes; --wait exits 8 when the failure threshold paused the job, which the generated commands resume and cancel", async () => {
    const refused = await fleet(["jobs", "create", "restart-agent", "--selector", "site=mill"]).exited;
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain("a restart-agent job needs --yes when stdin is not a terminal");
    expect((await service.call<{ total: number }>("GET", "/api/v1/jobs?kind=restart-agent")).total).toBe(0);

    const run = await drive(fleet(["jobs", "create", "restart-agent", "--selector", "site=mill", "--canary", "1", "--failure-threshold", "50", "--yes", "--wait", "--timeout", "60s", "-o", "json"]).exited, "failed");
    expect(run.code, run.stderr).toBe(8);
    const job = JSON.parse(run.stdout);
    expect(job).toMatchObject({ state: "paused", stateReason: "canary: job paused, its failed devices reached the failure threshold (50%)", counts: { failed: 1, queued: 2 } });
    const resumed = await fleet(["jobs", "resume", job.id, "-o", "json"]).exited;
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(JSON.parse(resumed.stdout)).toMatchObject({ state: "in_progress", currentBatch: 1 });
    const cancelled = await fleet(["jobs", "cancel", job.id, "-o", "json"]).exited;
    expect(JSON.parse(cancelled.stdout)).toMatchObject({ state: "cancelled", counts: { cancelled: 2, failed: 1 } });
  });
});
