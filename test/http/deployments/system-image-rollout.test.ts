// A deployment of a system image (a RAUC bundle, docs/os-updates.md) is judged by what the
// device booted. Simulated devices (src/simulator: VirtualDevice with a VirtualSystem, the agent's
// own deployment state machine and session) speak the real protocol to the real service: they
// receive the system image in the desired state, "boot" it (commit) or fall back (rollback), and
// report their system after the boot. Real: the service, its database, the heartbeat route, the
// rollout engine. Simulated: the device's OS and its bootloader (the agent's RAUC driver against
// real RAUC is test/agent/os-update/rauc.test.ts).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { createEnrollmentToken, ensureCa } from "../agent/fleet-support.js";
import { importVersion, until } from "./support.js";
import { JsonClient } from "../../../agent/src/core/json-client.js";
import { VirtualDevice } from "../../../src/simulator/virtual-device.js";
import { VirtualSystem } from "../../../src/simulator/virtual-system.js";

const DIGEST = `sha256:${"9d".repeat(32)}`;
const BUNDLE = "https://files.example/acme-gateway-2.0.0.raucb";

let h: Harness;
let acme: Tenant;
let appId = "";
let client: JsonClient;
const devices: Record<string, VirtualDevice[]> = {};

async function fleet(label: string, count: number, behaviour: "commit" | "rollback"): Promise<VirtualDevice[]> {
  const token = await createEnrollmentToken(h, acme.key, { labels: { fleet: label }, maxUses: count });
  const made: VirtualDevice[] = [];
  for (let i = 0; i < count; i++) {
    const device = new VirtualDevice(`${label}-${i}`, client, "ES256", { timeScale: 0, system: new VirtualSystem(behaviour) });
    const enrolled = await device.enroll(token.token);
    expect(enrolled.status, JSON.stringify(enrolled.body)).toBe(200);
    made.push(device);
  }
  devices[label] = made;
  return made;
}

/** Heartbeats of every device (with facts and the system report) until `done` holds. */
async function beatUntil<T>(label: string, probe: () => Promise<T | undefined>, what: string): Promise<T> {
  return until(async () => {
    for (const device of devices[label]) {
      const res = await device.heartbeat(true);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
    }
    return probe();
  }, what);
}

async function api(method: string, path: string, body?: unknown) {
  const res = await h.api(method, path, { key: acme.key, ...(body === undefined ? {} : { body }) });
  expect(res.status, `${method} ${path}: ${res.text}`).toBeLessThan(300);
  return res.body;
}

async function deploy(label: string, strategy: Record<string, unknown>): Promise<string> {
  const created = await api("POST", "/api/v1/deployments", {
    name: `os ${label}`, applicationId: appId, version: "2.0.0", profileId: "compose-main", parameters: {},
    target: { labelSelector: { fleet: label } }, strategy,
  });
  await api("POST", `/api/v1/deployments/${created.id}/start`);
  return created.id;
}

const entries = async (id: string) => (await api("GET", `/api/v1/deployments/${id}/devices?limit=200`)).items as Array<{ deviceId: string; state: string; message: string | null }>;

beforeAll(async () => {
  h = await createHarness({ RATE_LIMIT_PER_SOURCE: "0", RATE_LIMIT_PER_CREDENTIAL: "0" });
  acme = await h.createTenant("Acme OS rollouts");
  await ensureCa(h, acme.key);
  appId = await importVersion(h, acme.org.id, { version: "2.0.0", appKey: "gateway-os", systemImage: { repository: BUNDLE, digest: DIGEST }, parametersYaml: "  {}\n" });
  client = new JsonClient(h.url, 8);
}, 120_000);

afterAll(async () => {
  client?.close();
  await h?.close();
});

describe("a system image's deployment is judged by what the device booted", () => {
  it("hands the system image over in the desired state, and a device is running only once it booted the desired digest", async () => {
    const [good, other] = await fleet("good", 2, "commit");
    // an agent that says the deployment runs without having booted the image (its system reports slot A, 1.0.0)
    const [liar] = await fleet("liar", 1, "commit");
    liar.system!.update = () => null;
    const id = await deploy("good", { type: "all-at-once" });
    const liarDeployment = await deploy("liar", { type: "all-at-once" });

    const first = await good.heartbeat(true);
    expect(first.status).toBe(200);
    expect(first.body.deployments[0]).toMatchObject({
      deploymentId: id, action: "install", version: "2.0.0",
      systemImage: { component: "os", url: BUNDLE, repository: BUNDLE, digest: DIGEST, version: "2.0.0" },
    });

    await beatUntil("good", async () => ((await entries(id)).every((e) => e.state === "running") ? true : undefined), "both devices running");
    await beatUntil("liar", async () => (liar.deployments.get(liarDeployment)?.state === "running" ? true : undefined), "the liar's agent running");
    // the liar's agent reported running; its system never booted the image: not running at the service
    for (let i = 0; i < 3; i++) await liar.heartbeat(true);
    const [liarEntry] = await entries(liarDeployment);
    expect(liarEntry).toMatchObject({ state: "installing", message: `the agent reports it installed, but the device has not reported the system image ${DIGEST} booted and committed` });

    for (const device of [good, other]) {
      const row = await h.services.prisma.device.findFirstOrThrow({ where: { organizationId: acme.org.id, reportedDeviceId: device.reportedDeviceId } });
      const shown = await api("GET", `/api/v1/devices/${row.id}`);
      expect(shown.system).toEqual({
        booted: { slot: "B", version: "2.0.0", digest: DIGEST, imageDigest: null },
        other: { slot: "A", version: "1.0.0", digest: null, imageDigest: null },
        lastUpdate: { outcome: "committed", reason: null, version: "2.0.0", digest: DIGEST },
        reportedAt: expect.any(String),
      });
      const history = await api("GET", `/api/v1/devices/${row.id}/system-updates`);
      expect(history).toMatchObject({ total: 1, hasMore: false, items: [{ digest: DIGEST, fromVersion: "1.0.0", toVersion: "2.0.0", fromSlot: "A", toSlot: "B", outcome: "committed", reason: null }] });
    }
    const deployment = await api("GET", `/api/v1/deployments/${id}`);
    expect(deployment.progress).toMatchObject({ running: 2, failed: 0 });
  });

  it("a device that rolled back is failed with its reason, never running, and the rollout pauses at its failure threshold", async () => {
    await fleet("bad", 4, "rollback");
    const id = await deploy("bad", { type: "staged", canary: { count: 2 }, batches: [{ percent: 100 }], successThreshold: 100, failureThreshold: 50, autoAdvance: true });
    const rollout = await beatUntil("bad", async () => {
      const s = await api("GET", `/api/v1/deployments/${id}/rollout`);
      return s.state === "paused" ? s : undefined;
    }, "the rollout paused");
    expect(rollout.reason).toBe("canary paused: its failed devices reached the failure threshold (50%)");
    const failed = (await entries(id)).filter((e) => e.state === "failed");
    expect(failed).toHaveLength(2);
    for (const entry of failed) {
      expect(entry.message).toMatch(/^system update 2\.0\.0 rolled back: the new system in slot B did not pass its health checks within 300 s .*the bootloader falls back to slot A/);
    }
    expect((await entries(id)).some((e) => e.state === "running")).toBe(false);

    const shown = await api("GET", `/api/v1/devices/${failed[0].deviceId}`);
    expect(shown.system).toMatchObject({
      booted: { slot: "A", version: "1.0.0", digest: null },
      other: { slot: "B", version: "2.0.0", digest: DIGEST },
      lastUpdate: { outcome: "rolled-back", version: "2.0.0", digest: DIGEST, reason: expect.stringContaining("the bootloader falls back to slot A") },
    });
    const history = await api("GET", `/api/v1/devices/${failed[0].deviceId}/system-updates`);
    expect(history.total).toBe(1);
    expect(history.items[0]).toMatchObject({ outcome: "rolled-back", fromSlot: "A", toSlot: "B", toVersion: "2.0.0", reason: expect.stringContaining("did not pass its health checks") });
  });

  it("the history lists a device's updates newest first, committed and rolled back, paged; another tenant's device is a 404", async () => {
    const [device] = devices.good;
    const row = await h.services.prisma.device.findFirstOrThrow({ where: { organizationId: acme.org.id, reportedDeviceId: device.reportedDeviceId } });
    // a second update, 3.0.0, that falls back on this device
    device.system!.behaviour = "rollback";
    device.system!.update({ component: "os", url: BUNDLE, repository: BUNDLE, digest: `sha256:${"3e".repeat(32)}`, version: "3.0.0" });
    await device.heartbeat(true);
    const page = await api("GET", `/api/v1/devices/${row.id}/system-updates?limit=1`);
    expect(page).toMatchObject({ total: 2, hasMore: true, items: [{ outcome: "rolled-back", toVersion: "3.0.0", fromVersion: "2.0.0" }] });
    const rest = await api("GET", `/api/v1/devices/${row.id}/system-updates?limit=1&offset=1`);
    expect(rest).toMatchObject({ total: 2, hasMore: false, items: [{ outcome: "committed", toVersion: "2.0.0" }] });
    // repeated reports of the same update add nothing
    await device.heartbeat(true);
    expect((await api("GET", `/api/v1/devices/${row.id}/system-updates`)).total).toBe(2);
    const shown = await api("GET", `/api/v1/devices/${row.id}`);
    expect(shown.system.booted).toMatchObject({ slot: "B", version: "2.0.0", digest: DIGEST });
    expect(shown.system.lastUpdate).toMatchObject({ outcome: "rolled-back", version: "3.0.0" });

    const other = await h.createTenant("Other OS tenant");
    expect((await h.api("GET", `/api/v1/devices/${row.id}/system-updates`, { key: other.key })).status).toBe(404);
    const bad = await h.api("GET", `/api/v1/devices/${row.id}/system-updates?limit=0`, { key: acme.key });
    expect(bad.status).toBe(400);
    expect(bad.text).toContain("limit");
  });

  it("a heartbeat's system report with a malformed digest is refused naming the field, and nothing is stored", async () => {
    const [device] = devices.liar;
    const row = await h.services.prisma.device.findFirstOrThrow({ where: { organizationId: acme.org.id, reportedDeviceId: device.reportedDeviceId } });
    const before = await h.services.prisma.deviceSystem.findUnique({ where: { deviceId: row.id } });
    const res = await device.exchangeHeartbeat(device.deployments, { status: "online", system: { bootedSlot: "B", booted: { digest: "md5:nope" } } });
    expect(res.response.status).toBe(400);
    expect(JSON.stringify(res.response.body)).toContain("system.booted.digest");
    expect(await h.services.prisma.deviceSystem.findUnique({ where: { deviceId: row.id } })).toEqual(before);
  });
});
