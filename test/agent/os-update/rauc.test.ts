// OS updates with real RAUC on loop devices (docs/os-updates.md, issue 53): the real agent
// (`fleet-agent run`, a child process) enrolled with the service (in process, on this phase's
// database, reached through a TCP proxy that can take it away) drives Debian's rauc 1.8 against
// two slots on loop devices (test/support/rauc-lab.ts): bundles built and signed once for the
// file by `rauc bundle` with a test CA, downloaded by the agent from a loopback HTTP server that
// answers Range requests, installed by `rauc install`, the slots' bytes checked by hash.
//
// What is simulated, and only this: the boot. The bootloader is RAUC's `custom` backend, a
// script of the test keeping boot order, slot states and attempts in a file; the agent's reboot
// command (FLEET_AGENT_REBOOT_COMMAND) only writes a line, and the test then "reboots": it kills
// the agent (kill -9, as a power cut would), lets the bootloader file decide the slot, starts
// RAUC's service again told that slot is booted, writes a new boot id and starts the agent again.
// The agent's state machine across the reboot, the trial boot, mark-good, mark-bad and the
// fallback run for real against RAUC. No application is deployed here: the health check "the
// deployed applications run" passes vacuously; the check that fails in the fallback case is
// "the agent reaches the service" (the proxy taken away). A system that never comes up is a boot
// after which the test starts no agent and boots again.
import { spawn, execFile, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { AGENT_BIN } from "../../support/agent-lab.js";
import { peersAvailable } from "../../support/peers.js";
import { eventually } from "../../support/server-process.js";
import { startTcpProxy, type TcpProxy } from "../../support/tcp-proxy.js";
import { buildRaucBundles, endProcess, LAB_COMPATIBLE, serveBundles, startRaucLab, type BundleServer, type RaucBundle, type RaucBundles, type RaucLab } from "../../support/rauc-lab.js";
import { createEnrollmentToken, ensureCa } from "../../http/agent/fleet-support.js";
import { importVersion } from "../../http/deployments/support.js";
import { startOciRegistry, type OciRegistryServer } from "../../support/oci-registry.js";

const runFile = promisify(execFile);
const WORK = "/dev/shm/fleet-tests";
const ZERO_SLOT = "bb9f8df61474d25e71fa00722318cd387396ca1736605e1248821cc0de3d3af8"; // sha256 of 4 MiB of zeros: slot B as it came

describe.skipIf(!peersAvailable("rauc", "podman", "docker-registry", "htpasswd"))("OS updates with real RAUC on loop devices", { timeout: 240_000 }, () => {
  let h: Harness;
  let acme: Tenant;
  let proxy: TcpProxy;
  let bundles: RaucBundles;
  let lab: RaucLab;
  let server: BundleServer;
  let stateDir = "";
  let deviceId = "";
  let agent: ChildProcess | null = null;
  const output: string[] = [];
  let rebootFile = "";
  let registry: OciRegistryServer | null = null;

  const updateState = () => JSON.parse(fs.readFileSync(path.join(stateDir, "os-update.json"), "utf8"));
  const phase = (wanted: string, ms = 60_000) => eventually(async () => {
    if (!fs.existsSync(path.join(stateDir, "os-update.json"))) return undefined;
    const state = updateState();
    return state.phase === wanted ? state : undefined;
  }, ms, `the OS update's phase ${wanted}`);
  const rebootsAsked = () => (fs.existsSync(rebootFile) ? fs.readFileSync(rebootFile, "utf8").split("\n").filter(Boolean).length : 0);
  const facts = async () => {
    const res = await h.api("GET", `/api/v1/devices/${deviceId}`, { key: acme.key });
    expect(res.status, res.text).toBe(200);
    return res.body.facts as Record<string, unknown>;
  };

  const system = async () => {
    const res = await h.api("GET", `/api/v1/devices/${deviceId}`, { key: acme.key });
    expect(res.status, res.text).toBe(200);
    return res.body.system;
  };
  const systemUpdates = async () => {
    const res = await h.api("GET", `/api/v1/devices/${deviceId}/system-updates`, { key: acme.key });
    expect(res.status, res.text).toBe(200);
    return res.body.items;
  };

  function startAgent() {
    const child = spawn(process.execPath, [AGENT_BIN, "run", "--state-dir", stateDir, "--engine", "podman"], {
      env: {
        ...process.env, ...lab.agentEnv, FLEET_AGENT_REBOOT_COMMAND: `echo reboot >> '${rebootFile}'`, FLEET_AGENT_TELEMETRY_SECONDS: "600", FLEET_AGENT_LOG_SECONDS: "600",
        FLEET_AGENT_HEALTH_DIR: path.join(lab.dir, "health.d"),
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    for (const stream of [child.stdout!, child.stderr!]) stream.on("data", (chunk: Buffer) => output.push(...chunk.toString().split("\n").filter(Boolean)));
    agent = child;
  }

  async function killAgent() {
    const child = agent;
    agent = null;
    await endProcess(child, "SIGKILL");
  }

  /** The power goes (kill -9 of the agent), the bootloader picks the slot, RAUC and the agent start again. */
  async function reboot(): Promise<string> {
    await killAgent();
    const slot = await lab.boot();
    startAgent();
    return slot;
  }

  async function requestUpdate(bundle: RaucBundle, extra: string[] = [], sha256 = bundle.sha256) {
    const { stdout } = await runFile(process.execPath, [AGENT_BIN, "os-update", "--state-dir", stateDir, "--url", server.urlOf(bundle), "--sha256", sha256, "--version", bundle.version, ...extra], { timeout: 60_000 });
    expect(stdout).toContain("the OS update is handed to the agent");
  }

  beforeEach(({ onTestFailed }) => onTestFailed(() => console.error(`fleet-agent printed:\n${output.slice(-60).join("\n")}\nbootloader: ${JSON.stringify(lab?.bootState())}`)));

  beforeAll(async () => {
    // the bundles once for the file: 2.0.0, 3.0.0 and 4.0.0, another CA's, another compatible's
    // one after the other (under a second for the bundles), so afterAll finds whatever was made
    bundles = await buildRaucBundles(["2.0.0", "3.0.0", "4.0.0"]);
    h = await createHarness({ HEARTBEAT_INTERVAL_SECONDS: "5" });
    acme = await h.createTenant("Acme OS updates");
    await ensureCa(h, acme.key);
    const service = new URL(h.url);
    proxy = await startTcpProxy(service.hostname, Number(service.port));
    server = await serveBundles(bundles);
    lab = await startRaucLab(bundles.keyringPem);
    fs.mkdirSync(WORK, { recursive: true });
    stateDir = fs.mkdtempSync(path.join(WORK, "os-update-agent-"));
    rebootFile = path.join(lab.dir, "reboots-asked");
    const { token } = await createEnrollmentToken(h, acme.key);
    await runFile(process.execPath, [AGENT_BIN, "enroll", "--url", `http://127.0.0.1:${proxy.port}`, "--token", token, "--device-id", "rauc-gateway", "--state-dir", stateDir], { timeout: 120_000 });
    deviceId = JSON.parse(fs.readFileSync(path.join(stateDir, "identity.json"), "utf8")).deviceId;
    startAgent();
  }, 180_000);

  afterAll(async () => {
    await killAgent();
    await registry?.close();
    await server?.close();
    await lab?.close();
    bundles?.close();
    await proxy?.close();
    await h?.close();
    if (stateDir) fs.rmSync(stateDir, { recursive: true, force: true });
  }, 60_000);

  it("reports RAUC's facts: the compatible, the slots, slot A booted (the factory image, never installed by RAUC)", async () => {
    const reported = await eventually(async () => {
      const f = await facts();
      return f["rauc.bootedSlot"] ? f : undefined;
    }, 60_000, "the RAUC facts at the service");
    expect(reported).toMatchObject({ rauc: true, "rauc.compatible": LAB_COMPATIBLE, "rauc.bootedSlot": "A", "rauc.booted.version": null, "rauc.other.version": null });
    expect(reported["rauc.slots"]).toBe("rootfs.0=A:booted:good rootfs.1=B:inactive:bad");
    // a routine boot: the booted slot marked good once its own checks passed (RAUC's mark-good at every boot)
    await eventually(async () => (output.some((line) => line.includes("slot A booted and passed the device's checks; marked good")) ? true : undefined), 30_000, "the routine mark-good");
  });

  it("a bundle signed by another CA, one for another compatible, and one that does not match its digest are refused and reported; slot B is untouched, nothing reboots", async () => {
    await requestUpdate(bundles.otherCa);
    const refused = await phase("failed");
    expect(refused.reason).toMatch(/^RAUC refused the bundle: signature verification failed/);

    await requestUpdate(bundles.wrongCompatible);
    await eventually(async () => (updateState().target.sha256 === bundles.wrongCompatible.sha256 && updateState().phase === "failed" ? true : undefined), 60_000, "the wrong compatible refused");
    expect(updateState().reason).toBe(`RAUC refused the bundle: Installation error: Compatible mismatch: Expected '${LAB_COMPATIBLE}' but bundle manifest has 'another-board'`);

    const wrongDigest = "0".repeat(64);
    await requestUpdate(bundles.good("2.0.0"), [], wrongDigest);
    await eventually(async () => (updateState().target.sha256 === wrongDigest && updateState().phase === "failed" ? true : undefined), 60_000, "the digest mismatch refused");
    expect(updateState().reason).toBe(`the bundle does not match its digest: expected sha256:${wrongDigest}, ${server.urlOf(bundles.good("2.0.0"))} served sha256:${bundles.good("2.0.0").sha256}`);

    // the service holds the last refusal; the system is as it was
    await eventually(async () => ((await facts())["osUpdate.bundleSha256"] === wrongDigest ? true : undefined), 30_000, "the refusal at the service");
    expect(await facts()).toMatchObject({ "osUpdate.phase": "failed", "rauc.bootedSlot": "A" });
    expect(lab.slotSha256("B")).toBe(ZERO_SLOT);
    expect(lab.bootState()).toMatchObject({ order: "A B", A_state: "good", B_state: "bad" });
    expect(rebootsAsked()).toBe(0);
  });

  it("2.0.0: the download cut halfway goes on by Range, RAUC writes slot B, the reboot boots B on trial, the health checks pass and B is marked good", async () => {
    const bundle = bundles.good("2.0.0");
    server.cutNext(bundle, Math.floor(fs.statSync(bundle.file).size / 2));
    await requestUpdate(bundle, ["--health-seconds", "60"]);
    await phase("rebooting");
    expect(server.ranges.some((r) => r.file === path.basename(bundle.file) && r.range !== "bytes=0-")).toBe(true);
    expect(output.some((line) => line.includes("the download goes on from"))).toBe(true);
    // RAUC wrote the root file system image into slot B and made B the bootloader's next slot, on trial
    expect(lab.slotSha256("B")).toBe(bundle.imageSha256);
    expect(lab.bootState()).toMatchObject({ order: "B A", B_state: "trial", B_attempts: "1", A_state: "good" });
    expect(rebootsAsked()).toBe(1);

    expect(await reboot()).toBe("B");
    const updated = await phase("updated");
    expect(updated.reason).toBe("slot B runs 2.0.0 and passed its health checks; marked good");
    expect(lab.bootState()).toMatchObject({ B_state: "good" });
    const status = await lab.status();
    expect(status.booted).toBe("B");
    await eventually(async () => ((await facts())["osUpdate.phase"] === "updated" ? true : undefined), 30_000, "updated at the service");
    expect(await facts()).toMatchObject({ "rauc.bootedSlot": "B", "rauc.booted.version": "2.0.0", "rauc.booted.imageSha256": bundle.imageSha256, "osUpdate.version": "2.0.0" });
    // the heartbeat's system report, as the service keeps it: what booted, by the bundle's digest the service compares with
    expect(await system()).toMatchObject({
      booted: { slot: "B", version: "2.0.0", digest: `sha256:${bundle.sha256}`, imageDigest: `sha256:${bundle.imageSha256}` },
      other: { slot: "A" },
      lastUpdate: { outcome: "committed", version: "2.0.0", digest: `sha256:${bundle.sha256}` },
    });
    expect((await systemUpdates())[0]).toMatchObject({ outcome: "committed", digest: `sha256:${bundle.sha256}`, fromSlot: "A", toSlot: "B", toVersion: "2.0.0" });
  });

  it("3.0.0 whose trial boot cannot reach the service: marked bad when its time is up, the bootloader falls back to B, reported rolled back with the reason", async () => {
    const bundle = bundles.good("3.0.0");
    await requestUpdate(bundle, ["--health-seconds", "4"]);
    await phase("rebooting");
    expect(lab.slotSha256("A")).toBe(bundle.imageSha256);

    await proxy.down(); // the new system cannot reach the service
    expect(await reboot()).toBe("A");
    await phase("trial");
    const fallingBack = await phase("falling-back");
    expect(fallingBack.reason).toBe("the new system in slot A did not pass its health checks within 4 s (service: no heartbeat was answered since the boot); marked bad, the bootloader falls back to slot B");
    expect(lab.bootState()).toMatchObject({ A_state: "bad", B_state: "good" });

    await proxy.up();
    expect(await reboot()).toBe("B");
    const rolledBack = await phase("rolled-back");
    expect(rolledBack.reason).toBe(fallingBack.reason);
    await eventually(async () => ((await facts())["osUpdate.phase"] === "rolled-back" ? true : undefined), 30_000, "rolled back at the service");
    expect(await facts()).toMatchObject({ "osUpdate.reason": fallingBack.reason, "rauc.bootedSlot": "B", "rauc.booted.version": "2.0.0", "rauc.other.version": "3.0.0" });
    await eventually(async () => ((await system())?.lastUpdate?.outcome === "rolled-back" ? true : undefined), 30_000, "the system report's rollback at the service");
    expect(await system()).toMatchObject({
      booted: { slot: "B", version: "2.0.0" },
      other: { slot: "A", version: "3.0.0", digest: `sha256:${bundle.sha256}` },
      lastUpdate: { outcome: "rolled-back", version: "3.0.0", digest: `sha256:${bundle.sha256}`, reason: fallingBack.reason },
    });
    expect((await systemUpdates()).map((u: { outcome: string; toVersion: string }) => `${u.toVersion} ${u.outcome}`).slice(0, 2)).toEqual(["3.0.0 rolled-back", "2.0.0 committed"]);
  });

  it("kill -9 of the agent while RAUC installs 4.0.0: the restarted agent converges, slot A holds 4.0.0 and is kept after its trial boot", async () => {
    const bundle = bundles.good("4.0.0");
    lab.holdInstalls();
    await requestUpdate(bundle, ["--health-seconds", "60"]);
    await eventually(async () => (lab.installHeld() ? true : undefined), 60_000, "RAUC's install at its pre-install handler");
    expect(updateState().phase).toBe("installing");
    await killAgent();
    const seen = output.length;
    startAgent(); // the same boot: only the agent died; RAUC's service goes on installing
    await eventually(async () => (output.slice(seen).some((line) => line.includes("OS update: RAUC is busy with an install; waiting for it")) ? true : undefined), 60_000, "the restarted agent waiting for RAUC");
    expect(updateState().phase).toBe("installing");
    lab.release();
    await phase("rebooting");
    expect(lab.slotSha256("A")).toBe(bundle.imageSha256);
    expect(lab.bootState()).toMatchObject({ order: "A B", A_state: "trial" });

    expect(await reboot()).toBe("A");
    expect((await phase("updated")).reason).toBe("slot A runs 4.0.0 and passed its health checks; marked good");
    expect(lab.bootState()).toMatchObject({ A_state: "good", B_state: "good" });
  });

  it("3.0.0 into slot B whose system never comes up: the bootloader's one trial attempt is used, the next boot is A again, reported rolled back", async () => {
    const bundle = bundles.good("3.0.0");
    await requestUpdate(bundle, ["--health-seconds", "60"]);
    await phase("rebooting");
    expect(lab.slotSha256("B")).toBe(bundle.imageSha256);
    await killAgent();
    // the new system's boot: no agent starts on it (it hangs), and the watchdog resets the machine
    expect(await lab.boot()).toBe("B");
    expect(lab.bootState()).toMatchObject({ B_state: "trial", B_attempts: "0" });
    expect(await reboot()).toBe("A");
    const rolledBack = await phase("rolled-back");
    expect(rolledBack.reason).toBe("the new system in slot B did not come up: the bootloader booted slot A again");
    await eventually(async () => ((await facts())["osUpdate.phase"] === "rolled-back" && (await facts())["osUpdate.version"] === "3.0.0" ? true : undefined), 30_000, "rolled back at the service");
    expect(await facts()).toMatchObject({ "rauc.bootedSlot": "A", "rauc.booted.version": "4.0.0" });
  });
  it("a deployment of 2.0.0 kept in an OCI registry, in a maintenance window not open yet: the bundle comes through the service while the window is download-only, RAUC installs it only once the window opens, the trial runs the device's health.d check, and the deployment runs", async () => {
    const bundle = bundles.good("2.0.0");
    const rebootsBefore = rebootsAsked();
    // the bundle as `oras push` leaves it, in a registry with Basic auth that the organization configured
    registry = await startOciRegistry({ basic: { username: "os-builder", password: "os-builder-secret" } });
    const layer = await registry.pushBlob("os/gateway", fs.readFileSync(bundle.file), "application/vnd.rauc.bundle");
    const config = await registry.pushBlob("os/gateway", "{}", "application/vnd.oci.empty.v1+json");
    await registry.pushManifest("os/gateway", "2.0.0", { schemaVersion: 2, mediaType: "application/vnd.oci.image.manifest.v1+json", artifactType: "application/vnd.rauc.bundle", config, layers: [layer] });
    const created = await h.api("POST", "/api/v1/registries/oci", { key: acme.key, body: { name: "OS images", url: registry.url, authType: "BASIC", credential: "os-builder:os-builder-secret" } });
    expect(created.status, created.text).toBe(201);
    const appId = await importVersion(h, acme.org.id, {
      version: "2.0.0", appKey: "gateway-os", systemImageOnly: true, parametersYaml: "  {}\n",
      systemImage: { repository: `oci://${new URL(registry.url).host}/os/gateway`, digest: `sha256:${bundle.sha256}` },
    });
    // the device's own check: it records that it ran, and passes
    const healthDir = path.join(lab.dir, "health.d");
    fs.mkdirSync(healthDir, { recursive: true });
    fs.writeFileSync(path.join(healthDir, "10-data"), `#!/bin/sh\necho "$(date +%s)" >> '${path.join(lab.dir, "health-ran")}'\n`, { mode: 0o755 });

    // a window that opens in five minutes on the UTC clock (downloads any time before it), and is
    // open now for a device whose time zone label says two hours ahead
    const now = Date.now();
    const hhmm = (ms: number) => new Date(ms).toISOString().slice(11, 16);
    const end = hhmm(now + 3 * 3600_000);
    const windows = [{ days: ["mon", "tue", "wed", "thu", "fri", "sat", "sun"], start: hhmm(now + 5 * 60_000), end: end === "00:00" ? "24:00" : end }];
    expect((await h.api("PATCH", `/api/v1/devices/${deviceId}`, { key: acme.key, body: { labels: { os: "gateway", tz: "UTC" } } })).status).toBe(200);
    const deployment = await h.api("POST", "/api/v1/deployments", {
      key: acme.key,
      body: {
        name: "gateway OS 2.0.0", applicationId: appId, version: "2.0.0", profileId: "compose-main", parameters: {},
        target: { labelSelector: { os: "gateway" } }, maintenanceWindows: { timeZone: "UTC", timeZoneLabel: "tz", windows },
      },
    });
    expect(deployment.status, deployment.text).toBe(201);
    const id = deployment.body.id as string;
    expect((await h.api("POST", `/api/v1/deployments/${id}/start`, { key: acme.key })).status).toBe(200);
    const entry = async () => (await h.api("GET", `/api/v1/deployments/${id}/devices`, { key: acme.key })).body.items[0] as { state: string; message: string | null };

    // download-only: the bundle comes through the service's relay; nothing is installed
    const kept = path.join(stateDir, "os-update", `${bundle.sha256}.raucb`);
    await eventually(async () => (fs.existsSync(kept) ? true : undefined), 60_000, "the bundle fetched ahead of the window");
    expect(output.some((line) => line.includes("the bundle is downloaded ahead of the install"))).toBe(true);
    await eventually(async () => ((await entry()).state === "downloading" ? true : undefined), 30_000, "the device downloading at the service");
    expect(updateState().target.version).toBe("3.0.0"); // the last update stays the last: none begun
    expect(lab.slotSha256("B")).toBe(bundles.good("3.0.0").imageSha256);
    expect(rebootsAsked()).toBe(rebootsBefore);

    // the window opens for the device (its time zone): RAUC installs the bundle already here, into slot B
    const seen = output.length;
    expect((await h.api("PATCH", `/api/v1/devices/${deviceId}`, { key: acme.key, body: { labels: { os: "gateway", tz: "Etc/GMT-2" } } })).status).toBe(200);
    const rebooting = await phase("rebooting", 120_000);
    expect(rebooting.target).toMatchObject({ sha256: bundle.sha256, deploymentId: id, attempt: 1, serviceAuth: true });
    // the update found the bundle there: no download again, neither whole nor resumed
    expect(output.slice(seen).filter((line) => /downloaded ahead|the download goes on|could not be fetched/.test(line))).toEqual([]);
    expect(lab.slotSha256("B")).toBe(bundle.imageSha256);
    expect(fs.existsSync(path.join(lab.dir, "health-ran"))).toBe(false);

    expect(await reboot()).toBe("B");
    expect((await phase("updated")).reason).toBe("slot B runs 2.0.0 and passed its health checks; marked good");
    expect(fs.readFileSync(path.join(lab.dir, "health-ran"), "utf8").trim().split("\n").length).toBeGreaterThanOrEqual(1);
    // the deployment's install step goes on after the committed boot: running, judged by what booted
    await eventually(async () => ((await entry()).state === "running" ? true : undefined), 60_000, "the deployment running at the service");
    expect(await system()).toMatchObject({ booted: { slot: "B", version: "2.0.0", digest: `sha256:${bundle.sha256}` }, lastUpdate: { outcome: "committed" } });
  });
});
