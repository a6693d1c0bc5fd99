// The agent's device actions (agent/src/actions/runner.ts) against a host whose engine counts
// what it is asked: at most once by id (the same action handed over twice, and again after a
// restart of the agent), a lease deferring a restart until it ends, expiry on the device, a
// reboot judged by the boot id after the agent starts again, reports kept until acknowledged.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ActionRunner, type ActionEntry, type ActionHost } from "../../../agent/src/actions/runner.js";
import { StateDir } from "../../../agent/src/state-dir.js";
import type { ComposeEngine } from "../../../agent/src/runtime/engine.js";

let dir: string;
let calls: string[];
let host: ActionHost;

function makeHost(): ActionHost {
  const engine = {
    kind: "podman",
    down: async (p: { name: string }) => void calls.push(`down ${p.name}`),
    up: async (p: { name: string }) => void calls.push(`up ${p.name}`),
    containersOf: async () => [{ id: `c${calls.length}`, name: "web-1", service: "web", state: "running", health: null, exitCode: null, workingDir: null }],
    runHealthCheck: async () => undefined,
  } as unknown as ComposeEngine;
  return {
    state: new StateDir(dir),
    settings: { rebootCommand: `echo rebooted >> '${path.join(dir, "reboots")}'`, bootIdFile: path.join(dir, "boot_id"), leaseDir: path.join(dir, "leases"), leaseMaxSeconds: 600 },
    engine,
    installed: () => ({ app1: { projects: [{ name: "fleet-app1-web", dir }] } }),
    exclusive: (task) => task(),
    renewCertificate: async () => "renewed",
    uploadBundle: async () => ({ status: 201, body: {} }),
    status: () => ({}),
    recentLines: () => [],
    collectTelemetry: async () => undefined,
    log: () => undefined,
    wake: () => undefined,
    restartAgent: () => void calls.push("restart-agent"),
  };
}

const entry = (id: string, kind: string, expiresInMs = 600_000): ActionEntry => ({
  id, kind, deploymentId: kind.endsWith("-app") ? "d0000000-0000-4000-8000-000000000000" : null, applicationId: kind.endsWith("-app") ? "app1" : null,
  expiresAt: new Date(Date.now() + expiresInMs).toISOString(),
});
const settle = async (runner: ActionRunner, state: string, id: string) => {
  for (let i = 0; i < 100; i++) {
    if (runner.list().find((a) => a.id === id)?.state === state) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`${id} never ${state}: ${JSON.stringify(runner.list())}`);
};

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "agent-actions-"));
  fs.writeFileSync(path.join(dir, "boot_id"), "boot-1\n");
  calls = [];
  host = makeHost();
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

describe("at most once", () => {
  it("an action handed over twice, and again after the agent restarted, runs once", async () => {
    const runner = new ActionRunner(host);
    await runner.start();
    const a = entry("a0000000-0000-4000-8000-000000000001", "restart-app");
    runner.apply([a]);
    runner.apply([a]);
    await settle(runner, "succeeded", a.id);
    expect(calls).toEqual(["down fleet-app1-web", "up fleet-app1-web"]);
    expect(runner.pendingReports()).toEqual([expect.objectContaining({ id: a.id, state: "succeeded", message: "restarted fleet-app1-web: 1 container(s) running" })]);

    // the report was lost; the agent restarts and the service hands the action over again
    const again = new ActionRunner(makeHost());
    await again.start();
    again.apply([a]);
    again.tick();
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(calls).toHaveLength(2);
    // the result is still waiting to be reported, and is forgotten only once acknowledged
    const reports = again.pendingReports();
    expect(reports).toEqual([expect.objectContaining({ id: a.id, state: "succeeded" })]);
    again.acknowledge(reports as never);
    expect(again.pendingReports()).toEqual([]);
  });

  it("an action running when the agent stopped is reported failed, not begun again", async () => {
    new StateDir(dir).writeJson("actions.json", [{ ...entry("a0000000-0000-4000-8000-000000000002", "stop-app"), state: "running", rev: 1, reportedRev: 1 }]);
    const runner = new ActionRunner(host);
    await runner.start();
    expect(runner.pendingReports()).toEqual([expect.objectContaining({ state: "failed", message: "the agent stopped while it ran; not begun again (at most once)" })]);
    expect(calls).toEqual([]);
  });
});

describe("leases, expiry, reboot", () => {
  it("a lease defers a restart until it ends; a lease past its maximum holds nothing", async () => {
    fs.mkdirSync(path.join(dir, "leases"));
    const until = new Date(Date.now() + 60_000).toISOString();
    fs.writeFileSync(path.join(dir, "leases", "forklift.json"), JSON.stringify({ until, reason: "carrying a load" }));
    const runner = new ActionRunner(host);
    await runner.start();
    const a = entry("a0000000-0000-4000-8000-000000000003", "restart-app");
    runner.apply([a]);
    await settle(runner, "deferred", a.id);
    expect(runner.pendingReports()).toEqual([{ id: a.id, state: "deferred", deferredUntil: until, deferredBy: "forklift", message: `deferred by a lease of forklift until ${until}: carrying a load` }]);
    expect(calls).toEqual([]);
    // a health check is not deferred
    const h = entry("a0000000-0000-4000-8000-000000000004", "check-health");
    runner.apply([a, h]);
    await settle(runner, "succeeded", h.id);
    // the lease ends
    fs.rmSync(path.join(dir, "leases", "forklift.json"));
    runner.tick();
    await settle(runner, "succeeded", a.id);
    expect(calls).toEqual(["down fleet-app1-web", "up fleet-app1-web"]);

    // a lease file written long ago holds no longer than leaseMaxSeconds
    const stale = path.join(dir, "leases", "crashed.json");
    fs.writeFileSync(stale, JSON.stringify({ until: new Date(Date.now() + 86_400_000).toISOString() }));
    const old = new Date(Date.now() - 601_000);
    fs.utimesSync(stale, old, old);
    const b = entry("a0000000-0000-4000-8000-000000000005", "stop-app");
    runner.apply([b]);
    await settle(runner, "succeeded", b.id);
  });

  it("a deferred action the service no longer hands over (cancelled) is dropped without running", async () => {
    fs.mkdirSync(path.join(dir, "leases"));
    fs.writeFileSync(path.join(dir, "leases", "job.json"), JSON.stringify({ until: new Date(Date.now() + 60_000).toISOString() }));
    const runner = new ActionRunner(host);
    await runner.start();
    const a = entry("a0000000-0000-4000-8000-000000000006", "reboot");
    runner.apply([a]);
    await settle(runner, "deferred", a.id);
    runner.apply([]);
    await settle(runner, "dropped", a.id);
    fs.rmSync(path.join(dir, "leases", "job.json"));
    runner.tick();
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(fs.existsSync(path.join(dir, "reboots"))).toBe(false);
  });

  it("an action past its expiry on the device is reported expired and not run", async () => {
    const runner = new ActionRunner(host);
    await runner.start();
    const a = entry("a0000000-0000-4000-8000-000000000007", "restart-app", -1000);
    runner.apply([a]);
    await settle(runner, "expired", a.id);
    expect(calls).toEqual([]);
  });

  it("reboot: the command runs once its running report was acknowledged; done when the boot id changed", async () => {
    const runner = new ActionRunner(host);
    await runner.start();
    const a = entry("a0000000-0000-4000-8000-000000000008", "reboot");
    runner.apply([a]);
    await settle(runner, "running", a.id);
    runner.tick();
    expect(fs.existsSync(path.join(dir, "reboots"))).toBe(false);
    runner.acknowledge(runner.pendingReports() as never);
    runner.tick();
    for (let i = 0; i < 100 && !fs.existsSync(path.join(dir, "reboots")); i++) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(fs.readFileSync(path.join(dir, "reboots"), "utf8")).toBe("rebooted\n");

    fs.writeFileSync(path.join(dir, "boot_id"), "boot-2\n");
    const after = new ActionRunner(makeHost());
    await after.start();
    expect(after.pendingReports()).toEqual([expect.objectContaining({ id: a.id, state: "succeeded", message: "rebooted: boot id boot-1 -> boot-2", result: { bootIdBefore: "boot-1", bootIdAfter: "boot-2" } })]);
    expect(fs.readFileSync(path.join(dir, "reboots"), "utf8")).toBe("rebooted\n");
  });
});
