// Device actions with the real agent on Podman (runc) against the service as `npm start`
// starts it (docs/actions.md): restart, stop and start of a deployment's compose project (the
// engine's container ids change, the page answers or not, the service holds the right state),
// a re-check of health, a diagnostics bundle downloaded and opened (the named parts, no secret
// of the agent), a lease deferring a restart until it expires, and an upgrade's install and an
// operator's stop (the removal) until it expires, a certificate renewed at once,
// a job that expires while the device is offline, a restart of the agent, and a reboot.
//
// The reboot executor is injected (FLEET_AGENT_REBOOT_COMMAND writes a line to a file instead of
// rebooting this machine) and so is the boot id's file (FLEET_AGENT_BOOT_ID_FILE): the test
// writes a new boot id and starts the agent again, as a machine that rebooted would. Everything
// else is real.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseTarGzip } from "nanotar";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { LAB_KEY, startAgentLab, type AgentLab } from "../support/agent-lab.js";
import { peerAvailable } from "../support/peers.js";
import { eventually } from "../support/server-process.js";

const available = peerAvailable("podman") && peerAvailable("docker-registry");

interface Action { id: string; state: string; message: string | null; result: Record<string, unknown> | null; deferredUntil: string | null; deferredBy: string | null; bundle: { sizeBytes: number; sha256: string } | null }

describe.skipIf(!available)("device actions with the real agent on Podman", { timeout: 300_000 }, () => {
  let lab: AgentLab;
  let deploymentId = "";
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "fleet-actions-"));
  const bootIdFile = path.join(dir, "boot_id");
  const rebootCalls = path.join(dir, "reboot-calls");
  const leaseDir = path.join(dir, "leases");

  const act = async (kind: string, extra: Record<string, unknown> = {}) =>
    (await lab.call<Action>("POST", "/api/v1/device-actions", { deviceId: lab.deviceId, kind, ...extra })).id;
  const get = (id: string) => lab.call<Action>("GET", `/api/v1/device-actions/${id}`);
  const until = (id: string, state: string, ms = 90_000) => eventually(async () => {
    const a = await get(id);
    if (a.state === "failed" && state !== "failed") throw new Error(`action failed: ${a.message}`);
    return a.state === state ? a : undefined;
  }, ms, `action ${id} ${state}`);
  /** the ids of the web project's containers (with `running`: only those running) */
  const containerIds = async (running = false) => {
    const project = `fleet-${lab.applicationId}-web`;
    const out = await lab.podman.podman(["ps", ...(running ? [] : ["-a"]), "--filter", `label=com.docker.compose.project=${project}`, "--format", "{{.ID}}"]);
    return out.trim().split("\n").filter(Boolean);
  };

  beforeEach(({ onTestFailed }) => onTestFailed(() => console.error(`fleet-agent printed:\n${lab?.agentOutput.slice(-60).join("\n")}`)));

  beforeAll(async () => {
    fs.writeFileSync(bootIdFile, "boot-1\n");
    fs.mkdirSync(leaseDir);
    lab = await startAgentLab({
      database: "migrated",
      agentEnv: {
        FLEET_AGENT_TELEMETRY_SECONDS: "5", FLEET_AGENT_LOG_SECONDS: "5",
        FLEET_AGENT_REBOOT_COMMAND: `echo reboot-called >> '${rebootCalls}'`,
        FLEET_AGENT_BOOT_ID_FILE: bootIdFile,
        FLEET_AGENT_LEASE_DIR: leaseDir,
        FLEET_AGENT_LEASE_MAX_SECONDS: "600",
      },
    });
    await lab.enroll(["--name", "actions-gateway"]);
    lab.startAgent();
    deploymentId = await lab.deploy("1.0.0", { greeting: "hallo" });
    await lab.waitForState(deploymentId, "running");
    expect(await lab.page()).toBe("version 1.0.0 says hallo");
  }, 400_000);
  afterAll(async () => {
    await lab?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }, 120_000);

  it("restart-app: new containers, the page answers again, the service holds succeeded; stop-app and start-app", async () => {
    const before = await containerIds();
    expect(before).toHaveLength(1);
    const restarted = await until(await act("restart-app", { deploymentId, reason: "memory leak" }), "succeeded");
    const after = await containerIds();
    expect(after).toHaveLength(1);
    expect(after[0]).not.toBe(before[0]);
    expect(await containerIds(true)).toEqual(after);
    expect(restarted.message).toMatch(/^restarted fleet-.*-web: 1 container\(s\) running$/);
    expect(await lab.page()).toBe("version 1.0.0 says hallo");

    const stopped = await until(await act("stop-app", { deploymentId }), "succeeded");
    expect(stopped.message).toMatch(/^stopped /);
    expect(await containerIds()).toEqual([]);
    expect(await lab.page()).toBeNull();

    await until(await act("start-app", { deploymentId }), "succeeded");
    expect(await containerIds(true)).toHaveLength(1);
    expect(await eventually(async () => (await lab.page()) ?? undefined, 30_000, "the page")).toBe("version 1.0.0 says hallo");
  });

  it("check-health reports each container; renew-certificate gives the device a new certificate now", async () => {
    const health = await until(await act("check-health"), "succeeded");
    expect(health.message).toBe("1 container(s) running");
    expect(health.result).toMatchObject({ containers: [expect.objectContaining({ service: "web", state: "running" })] });

    const identityBefore = JSON.parse(fs.readFileSync(path.join(lab.stateDir, "identity.json"), "utf8"));
    const renewed = await until(await act("renew-certificate"), "succeeded");
    expect(renewed.message).toMatch(/^certificate renewed with a new key; valid until /);
    const identityAfter = JSON.parse(fs.readFileSync(path.join(lab.stateDir, "identity.json"), "utf8"));
    expect(identityAfter.certificateId).not.toBe(identityBefore.certificateId);
    // the device goes on with the new certificate
    const seen = (await lab.call("GET", `/api/v1/devices/${lab.deviceId}`)).lastSeenAt;
    await eventually(async () => ((await lab.call("GET", `/api/v1/devices/${lab.deviceId}`)).lastSeenAt !== seen ? true : undefined), 30_000, "a heartbeat with the new certificate");
  });

  it("diagnostics: the bundle downloads as a tar.gz holding the named parts and no secret of the agent", async () => {
    const action = await until(await act("diagnostics", { reason: "errors since Tuesday" }), "succeeded");
    expect(action.bundle?.sizeBytes).toBeGreaterThan(0);
    const download = await fetch(`${lab.service.url}/api/v1/device-actions/${action.id}/bundle`, { headers: { "x-api-key": LAB_KEY } });
    expect(download.status).toBe(200);
    const files = await parseTarGzip(new Uint8Array(await download.arrayBuffer()));
    const names = files.map((f) => f.name);
    const project = `fleet-${lab.applicationId}-web`;
    expect(names).toEqual(expect.arrayContaining([
      "agent/status.json", "agent/recent-lines.txt", `engine/${project}.json`, "host/journal.txt", "host/memory.txt", "host/disk.json", "manifest.json",
    ]));
    const text = (name: string) => new TextDecoder().decode(files.find((f) => f.name === name)!.data);
    const containerLog = names.find((n) => n.startsWith("containers/"))!;
    expect(text(containerLog)).toContain("serving version 1.0.0");
    expect(JSON.parse(text(`engine/${project}.json`)).containers[0]).toMatchObject({ service: "web", state: "running" });
    expect(JSON.parse(text("agent/status.json")).deviceId).toBe(lab.deviceId);
    expect(text("agent/recent-lines.txt")).toContain("diagnostics (action");
    expect(text("host/memory.txt")).toMatch(/^MemTotal:/);
    // no secret of the agent: not its key, not its certificate, not the deployment's parameters' files
    const identity = JSON.parse(fs.readFileSync(path.join(lab.stateDir, "identity.json"), "utf8"));
    const key = fs.readFileSync(path.join(lab.stateDir, identity.keyFile), "utf8").split("\n")[1];
    const all = files.map((f) => new TextDecoder().decode(f.data)).join("\n");
    expect(all).not.toContain(key);
    expect(all).not.toContain("BEGIN PRIVATE KEY");
    expect(all).not.toContain("BEGIN CERTIFICATE");
  });

  it("a lease defers a restart until it expires: the service shows by whom and until when", async () => {
    const leaseUntil = new Date(Date.now() + 8000).toISOString();
    fs.writeFileSync(path.join(leaseDir, "forklift.json.tmp"), JSON.stringify({ until: leaseUntil, reason: "carrying a load" }));
    fs.renameSync(path.join(leaseDir, "forklift.json.tmp"), path.join(leaseDir, "forklift.json"));
    const before = await containerIds();
    const id = await act("restart-app", { deploymentId });
    const deferred = await until(id, "deferred", 30_000);
    expect(deferred).toMatchObject({ deferredBy: "forklift", deferredUntil: leaseUntil });
    expect(deferred.message).toContain("carrying a load");
    expect(await containerIds()).toEqual(before);
    // the lease is not renewed: it expires, and the restart runs then
    const done = await until(id, "succeeded", 60_000);
    expect(Date.now()).toBeGreaterThanOrEqual(Date.parse(leaseUntil));
    expect(done.deferredUntil).toBe(leaseUntil);
    expect((await containerIds())[0]).not.toBe(before[0]);
    fs.rmSync(path.join(leaseDir, "forklift.json"));
  });

  it("a lease defers an upgrade's install and a removal until it expires, then both happen", async () => {
    const lease = (ms: number) => {
      const leaseUntil = new Date(Date.now() + ms).toISOString();
      fs.writeFileSync(path.join(leaseDir, "forklift.json.tmp"), JSON.stringify({ until: leaseUntil, reason: "carrying a load" }));
      fs.renameSync(path.join(leaseDir, "forklift.json.tmp"), path.join(leaseDir, "forklift.json"));
      return leaseUntil;
    };
    const deviceMessage = (id: string, prefix: string) => eventually(async () => {
      const entry = await lab.deviceState(id);
      return entry?.message?.startsWith(prefix) ? entry : undefined;
    }, 30_000, `the device's message "${prefix}..."`);

    // the upgrade downloads, but 1.0.0 keeps serving while the lease holds
    const installUntil = lease(10_000);
    const upgrade = await lab.deploy("2.0.0", { greeting: "hallo" });
    expect(await deviceMessage(upgrade, "install deferred")).toMatchObject({ deviceId: lab.deviceId, state: "downloading", message: `install deferred by a lease of forklift until ${installUntil}` });
    expect(await lab.page()).toBe("version 1.0.0 says hallo");
    await lab.waitForState(upgrade, "running", 60_000);
    expect(Date.now()).toBeGreaterThanOrEqual(Date.parse(installUntil));
    expect(await eventually(async () => ((await lab.page()) === "version 2.0.0 says hallo" ? true : undefined), 30_000, "2.0.0's page")).toBe(true);

    // an operator's stop: the application keeps running while the lease holds, then it is removed
    const removalUntil = lease(10_000);
    await lab.call("POST", `/api/v1/deployments/${upgrade}/stop`);
    expect(await deviceMessage(upgrade, "removal deferred")).toMatchObject({ deviceId: lab.deviceId, state: "running", message: `removal deferred by a lease of forklift until ${removalUntil}` });
    expect(await lab.page()).toBe("version 2.0.0 says hallo");
    expect(await containerIds(true)).toHaveLength(1);
    await lab.waitForState(upgrade, "removed", 60_000);
    expect(Date.now()).toBeGreaterThanOrEqual(Date.parse(removalUntil));
    expect(await containerIds()).toEqual([]);
    fs.rmSync(path.join(leaseDir, "forklift.json"));
  });

  it("a job that expires while the device is offline is never run by it when it returns", async () => {
    await lab.stopAgent();
    // The shortest expiry the API takes (60 s): the device is away for all of it.
    const job = await lab.call<{ id: string; state: string; expiresAt: string }>("POST", "/api/v1/jobs", {
      kind: "check-health", target: { deviceIds: [lab.deviceId] }, reason: "offline expiry", expiresInSeconds: 60,
    });
    expect(job.state).toBe("in_progress");
    const outputBefore = lab.agentOutput.length;
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, Date.parse(job.expiresAt) - Date.now()) + 1500));
    lab.startAgent();
    const actions = () => lab.call<{ items: Action[] }>("GET", `/api/v1/device-actions?jobId=${job.id}`);
    const [action] = await eventually(async () => {
      const { items } = await actions();
      return items[0]?.state === "expired" ? items : undefined;
    }, 90_000, "the job's action expired");
    expect(action).toMatchObject({ state: "expired", message: "expired before the device ran it", result: null });
    expect(await eventually(async () => {
      const current = await lab.call<{ state: string; counts: Record<string, number> }>("GET", `/api/v1/jobs/${job.id}`);
      return current.state === "expired" ? current : undefined;
    }, 60_000, "the job expired")).toMatchObject({ counts: { expired: 1, succeeded: 0, failed: 0 } });
    // the returned agent heartbeats on, and never begins it (it would say so with the action's id)
    const backAt = Date.now();
    await eventually(async () => {
      const device = await lab.call<{ lastSeenAt: string | null }>("GET", `/api/v1/devices/${lab.deviceId}`);
      return device.lastSeenAt && Date.parse(device.lastSeenAt) > backAt + 6000 ? true : undefined; // two heartbeats later (5 s interval)
    }, 60_000, "two more heartbeats");
    expect(lab.agentOutput.slice(outputBefore).filter((line) => line.includes(action.id))).toEqual([]);
    expect((await actions()).items[0].state).toBe("expired");
  });

  it("restart-agent: the agent exits to be started again (exit 75) and reports success from its new run", async () => {
    const agent = lab.agent!;
    const exited = new Promise<number | null>((resolve) => agent.once("exit", (code) => resolve(code)));
    const id = await act("restart-agent");
    expect(await exited).toBe(75);
    expect((await get(id)).state).toBe("running");
    lab.startAgent(); // as systemd's Restart=always does
    const done = await until(id, "succeeded");
    expect(done.message).toBe("the agent restarted");
  });

  it("reboot: the command runs once the service heard it began; success is reported when the device is back with another boot id", async () => {
    const id = await act("reboot", { reason: "kernel update" });
    await until(id, "running");
    await eventually(async () => (fs.existsSync(rebootCalls) ? true : undefined), 30_000, "the reboot command");
    expect(fs.readFileSync(rebootCalls, "utf8")).toBe("reboot-called\n");
    // still running: the device has not come back yet
    expect((await get(id)).state).toBe("running");
    // the machine "reboots": the agent stops, the boot id changes, the agent starts again
    await lab.stopAgent();
    fs.writeFileSync(bootIdFile, "boot-2\n");
    lab.startAgent();
    const done = await until(id, "succeeded");
    expect(done.message).toBe("rebooted: boot id boot-1 -> boot-2");
    expect(done.result).toEqual({ bootIdBefore: "boot-1", bootIdAfter: "boot-2" });
    // once: the command ran one time
    expect(fs.readFileSync(rebootCalls, "utf8")).toBe("reboot-called\n");
  });
});
