// Upgrading a running deployment in place (docs/deployments.md, "Upgrading a running
// deployment"): PATCH with a new version starts an update rollout of the new revision over the
// deployment's devices under its own strategy. Asserted on what the agents are told (each
// device's desired state: one version of the application, the old one until the update reaches
// it, never a removal), what they report, the deployment, its predecessor, the version history
// and rollback target; refusals (409 naming the field or the rollout state, 400 naming the
// field with nothing changed, 404 across tenants); abort and stop of an update rollout; a
// device that rolls a failed upgrade back itself (the release it runs again shown running).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { heartbeat, type EnrolledDevice } from "../agent/fleet-support.js";
import { agentHeartbeat, enrollFleet, importVersion, type DesiredEntry } from "./support.js";

let h: Harness;
let acme: Tenant;
let globex: Tenant;
let appId: string;
const TOKEN = "tok-" + "upgrade".repeat(3);

beforeAll(async () => {
  h = await createHarness();
  acme = await h.createTenant("Acme Upgrade");
  globex = await h.createTenant("Globex Upgrade");
  appId = await importVersion(h, acme.org.id, { version: "1.0.0" });
  await importVersion(h, acme.org.id, { version: "1.1.0" });
}, 120_000);

afterAll(async () => {
  if (process.env.DEBUG_LOGS) console.log(h.logs.filter((l) => /"level":(50|40)/.test(l)).slice(0, 5).join("\n"));
  await h?.close();
});

const api = (method: string, path: string, body?: unknown, key = acme.key) => h.api(method, `/api/v1${path}`, { key, body });

/** What the heartbeat tells the device about the application: [deployment, action, version]. */
async function told(device: EnrolledDevice): Promise<Array<[string, string, string]>> {
  return (await agentHeartbeat(h, device)).filter((x: DesiredEntry) => x.applicationId === appId).map((x) => [x.deploymentId, x.action, x.version]);
}

/** Every device obeys its desired state: reports running for each install it is told. */
async function runAll(devices: EnrolledDevice[]): Promise<void> {
  for (const device of devices) {
    const installs = (await agentHeartbeat(h, device)).filter((x) => x.action === "install");
    await agentHeartbeat(h, device, installs.map((x) => ({ deploymentId: x.deploymentId, state: "running" })));
  }
}

async function createStarted(name: string, devices: EnrolledDevice[], strategy: unknown = { type: "all-at-once" }): Promise<string> {
  const created = await api("POST", "/deployments", {
    name, applicationId: appId, version: "1.0.0", profileId: "compose-main", parameters: { apiToken: TOKEN, pollSeconds: 45 },
    target: { deviceIds: devices.map((d) => d.deviceId) }, strategy,
  });
  expect(created.status, created.text).toBe(201);
  const started = await api("POST", `/deployments/${created.body.id}/start`);
  expect(started.status, started.text).toBe(200);
  return created.body.id as string;
}

const predecessorsOf = (id: string) => h.services.prisma.deployment.findMany({ where: { upgradedToId: id }, orderBy: { createdAt: "asc" } });

describe("all-at-once", () => {
  let fleet: EnrolledDevice[];
  let id: string;

  it("PATCH version of a running deployment: 200, every device is told the new version only, and reports it running", async () => {
    fleet = await enrollFleet(h, acme.key, 3);
    id = await createStarted("aao", fleet);
    await runAll(fleet);
    expect((await api("GET", `/deployments/${id}`)).body).toMatchObject({ rolloutState: "completed", progress: { running: 3 } });

    const res = await api("PATCH", `/deployments/${id}`, { version: "1.1.0", parameters: { apiToken: TOKEN, pollSeconds: 50 } });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ id, name: "aao", version: "1.1.0", status: "running", rolloutState: "in_progress", progress: { pending: 3, total: 3 } });
    // the new revision's parameters (the secret too)
    const desired = (await agentHeartbeat(h, fleet[0])).filter((x) => x.applicationId === appId);
    expect(desired.map((x) => [x.deploymentId, x.action, x.version])).toEqual([[id, "install", "1.1.0"]]);
    expect(desired[0].parameters).toEqual({ gateway: { API_TOKEN: TOKEN, POLL_SECONDS: 50, MODE: "fast" } });
    for (const device of fleet) expect(await told(device)).toEqual([[id, "install", "1.1.0"]]);

    // the old revision's row: every device left it at once, so it ended
    const [old] = await predecessorsOf(id);
    expect(old).toMatchObject({ version: "1.0.0", status: "stopped", managedBy: null, continuous: false });
    expect(await h.services.prisma.deploymentDevice.count({ where: { deploymentId: old.id, state: "superseded", desiredAction: null } })).toBe(3);

    await runAll(fleet);
    const after = await api("GET", `/deployments/${id}`);
    expect(after.body).toMatchObject({ version: "1.1.0", rolloutState: "completed", progress: { running: 3, total: 3 } });
    const devices = await api("GET", `/deployments/${id}/devices`);
    expect(devices.body.items.map((x: { state: string }) => x.state)).toEqual(["running", "running", "running"]);
  });

  it("the device's version history holds both versions; a rollback goes to 1.0.0 with that revision's parameters", async () => {
    const history = await api("GET", `/devices/${fleet[0].deviceId}/deployment-history`);
    expect(history.status, history.text).toBe(200);
    expect(history.body.items.map((x: { version: string; outcome: string; deploymentName: string }) => [x.version, x.outcome, x.deploymentName])).toEqual([
      ["1.1.0", "running", "aao"],
      ["1.0.0", "running", "aao"],
    ]);
    const target = await api("GET", `/devices/${fleet[0].deviceId}/rollback-target?applicationId=${appId}`);
    expect(target.status, target.text).toBe(200);
    expect(target.body).toMatchObject({ currentVersion: "1.1.0", targetVersion: "1.0.0" });
    // the rollback reuses the old revision's values (kept by the predecessor), not the new ones
    const rolled = await api("POST", `/devices/${fleet[0].deviceId}/rollback`, { applicationId: appId });
    expect(rolled.status, rolled.text).toBe(200);
    const desired = (await agentHeartbeat(h, fleet[0])).filter((x) => x.applicationId === appId);
    expect(desired.map((x) => [x.action, x.version])).toEqual([["install", "1.0.0"]]);
    expect(desired[0].parameters).toEqual({ gateway: { API_TOKEN: TOKEN, POLL_SECONDS: 45, MODE: "fast" } });
  });

  it("the audit trail records the PATCH with the version change", async () => {
    const entry = await h.services.prisma.auditEntry.findFirst({ where: { organizationId: acme.org.id, entityId: id, action: { contains: "update" } }, orderBy: { createdAt: "desc" } });
    expect(entry?.changes).toMatchObject({ version: { from: "1.0.0", to: "1.1.0" } });
  });

  it("409 for a target change of a running deployment, naming the field; the same target, a name and description are accepted", async () => {
    const res = await api("PATCH", `/deployments/${id}`, { target: { deviceIds: [fleet[0].deviceId] } });
    expect(res.status, res.text).toBe(409);
    expect(res.body.message).toMatch(/^target: cannot change while the deployment is running/);
    const strategy = await api("PATCH", `/deployments/${id}`, { strategy: { type: "staged", canary: { count: 1 } } });
    expect(strategy.status).toBe(409);
    expect(strategy.body.message).toMatch(/^strategy:/);
    const same = await api("PATCH", `/deployments/${id}`, { name: "aao-renamed", description: "renamed", target: { deviceIds: fleet.map((d) => d.deviceId).reverse() } });
    expect(same.status, same.text).toBe(200);
    expect(same.body).toMatchObject({ name: "aao-renamed", version: "1.1.0", rolloutState: "completed" });
    expect(await predecessorsOf(id)).toHaveLength(1);
  });

  it("a version the application does not have: 400 naming the field, nothing changed", async () => {
    const before = await h.services.prisma.deploymentDevice.findMany({ where: { deploymentId: id }, orderBy: { deviceId: "asc" } });
    const res = await api("PATCH", `/deployments/${id}`, { version: "9.9.9" });
    expect(res.status, res.text).toBe(400);
    expect(res.body.message).toContain("version");
    expect(await h.services.prisma.deploymentDevice.findMany({ where: { deploymentId: id }, orderBy: { deviceId: "asc" } })).toEqual(before);
    expect(await predecessorsOf(id)).toHaveLength(1);
    expect((await api("GET", `/deployments/${id}`)).body).toMatchObject({ version: "1.1.0" });
  });

  it("another organization's deployment is a 404", async () => {
    const res = await api("PATCH", `/deployments/${id}`, { version: "1.0.0" }, globex.key);
    expect(res.status, res.text).toBe(404);
    expect((await api("GET", `/deployments/${id}`)).body).toMatchObject({ version: "1.1.0" });
  });
});

describe("staged", () => {
  let fleet: EnrolledDevice[];
  let id: string;
  let oldId: string;
  const strategy = { type: "staged", canary: { count: 1 }, batches: [{ percent: 100 }], successThreshold: 100, autoAdvance: false };

  it("the update rollout dispatches the canary only: the others are still told the old version (never to remove it)", async () => {
    fleet = await enrollFleet(h, acme.key, 4);
    id = await createStarted("staged", fleet, strategy);
    await runAll(fleet); // the canary
    expect((await api("POST", `/deployments/${id}/rollout/approve`)).status).toBe(200);
    await runAll(fleet);
    expect((await api("GET", `/deployments/${id}`)).body).toMatchObject({ rolloutState: "completed", progress: { running: 4 } });

    const res = await api("PATCH", `/deployments/${id}`, { version: "1.1.0" });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ version: "1.1.0", status: "running", rolloutState: "canary" });
    [{ id: oldId }] = await predecessorsOf(id);
    const canary = await h.services.prisma.deploymentDevice.findMany({ where: { deploymentId: id, batchIndex: 0 } });
    expect(canary).toHaveLength(1);
    for (const device of fleet) {
      const isCanary = device.deviceId === canary[0].deviceId;
      expect(await told(device)).toEqual(isCanary ? [[id, "install", "1.1.0"]] : [[oldId, "install", "1.0.0"]]);
    }
    expect((await h.services.prisma.deployment.findUniqueOrThrow({ where: { id: oldId } })).status).toBe("running");
  });

  it("while the update rollout is in flight, another version change is 409 naming the rollout state", async () => {
    const res = await api("PATCH", `/deployments/${id}`, { version: "1.0.0" });
    expect(res.status, res.text).toBe(409);
    expect(res.body.message).toContain("while its rollout is canary");
  });

  it("canary running -> awaiting approval; approve -> every device is told 1.1.0 and reports it; the predecessor ends", async () => {
    await runAll(fleet);
    expect((await api("GET", `/deployments/${id}`)).body).toMatchObject({ rolloutState: "awaiting_approval" });
    const approved = await api("POST", `/deployments/${id}/rollout/approve`);
    expect(approved.status, approved.text).toBe(200);
    for (const device of fleet) expect(await told(device)).toEqual([[id, "install", "1.1.0"]]);
    expect((await h.services.prisma.deployment.findUniqueOrThrow({ where: { id: oldId } })).status).toBe("stopped");
    await runAll(fleet);
    expect((await api("GET", `/deployments/${id}`)).body).toMatchObject({ version: "1.1.0", rolloutState: "completed", progress: { running: 4, total: 4 } });
  });
});

describe("stop while the update's last batch is in flight", () => {
  it("every device is told to remove the version it runs (a device told 1.1.0 and not started yet: its 1.0.0), once; then all is stopped", async () => {
    const fleet = await enrollFleet(h, acme.key, 3);
    const strategy = { type: "staged", canary: { count: 1 }, batches: [{ percent: 100 }], successThreshold: 100, autoAdvance: false };
    const id = await createStarted("stop-late", fleet, strategy);
    await runAll(fleet);
    await api("POST", `/deployments/${id}/rollout/approve`);
    await runAll(fleet);
    expect((await api("PATCH", `/deployments/${id}`, { version: "1.1.0" })).status).toBe(200);
    await runAll(fleet); // the canary runs 1.1.0
    expect((await api("POST", `/deployments/${id}/rollout/approve`)).status).toBe(200); // the last batch: told, not started
    const [old] = await predecessorsOf(id);
    expect((await h.services.prisma.deployment.findUniqueOrThrow({ where: { id: old.id } })).status).toBe("stopped");
    const canary = (await h.services.prisma.deploymentDevice.findFirstOrThrow({ where: { deploymentId: id, batchIndex: 0 } })).deviceId;
    const stopped = await api("POST", `/deployments/${id}/stop`, {});
    expect(stopped.status, stopped.text).toBe(200);
    for (const device of fleet) {
      expect(await told(device)).toEqual(device.deviceId === canary ? [[id, "remove", "1.1.0"]] : [[old.id, "remove", "1.0.0"]]);
    }
    expect((await h.services.prisma.deployment.findUniqueOrThrow({ where: { id: old.id } })).status).toBe("stopping");
    for (const device of fleet) {
      const removals = (await agentHeartbeat(h, device)).filter((x) => x.action === "remove");
      await agentHeartbeat(h, device, removals.map((x) => ({ deploymentId: x.deploymentId, state: "removed" })));
      expect(await told(device)).toEqual([]);
    }
    expect((await api("GET", `/deployments/${id}`)).body.status).toBe("stopped");
    expect((await h.services.prisma.deployment.findUniqueOrThrow({ where: { id: old.id } })).status).toBe("stopped");
  });
});

describe("abort and stop of an update rollout", () => {
  let fleet: EnrolledDevice[];
  let id: string;
  const strategy = { type: "staged", canary: { count: 1 }, batches: [{ percent: 100 }], successThreshold: 100, autoAdvance: false };

  it("abort before the canary device started: it keeps 1.0.0 (told the old version again), nothing else changes", async () => {
    fleet = await enrollFleet(h, acme.key, 3);
    id = await createStarted("abort", fleet, strategy);
    await runAll(fleet);
    await api("POST", `/deployments/${id}/rollout/approve`);
    await runAll(fleet);
    expect((await api("PATCH", `/deployments/${id}`, { version: "1.1.0" })).status).toBe(200);
    const [{ id: oldId }] = await predecessorsOf(id);
    const aborted = await api("POST", `/deployments/${id}/rollout/abort`, { reason: "wrong version" });
    expect(aborted.status, aborted.text).toBe(200);
    expect(aborted.body).toMatchObject({ state: "aborted" });
    expect((await api("GET", `/deployments/${id}`)).body).toMatchObject({ rolloutState: "aborted", version: "1.1.0" });
    for (const device of fleet) expect(await told(device)).toEqual([[oldId, "install", "1.0.0"]]);
    const kept = await h.services.prisma.deploymentDevice.findMany({ where: { deploymentId: oldId } });
    expect(kept.map((e) => e.state)).toEqual(["running", "running", "running"]);
    expect((await h.services.prisma.deployment.findUniqueOrThrow({ where: { id: oldId } })).status).toBe("running");
  });

  it("a device the aborted update reached keeps 1.1.0; a new PATCH after the abort rolls out again", async () => {
    const res = await api("PATCH", `/deployments/${id}`, { version: "1.1.0", parameters: { apiToken: TOKEN, pollSeconds: 60 } });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ rolloutState: "canary", parameters: { pollSeconds: 60 } });
    await runAll(fleet); // the canary reports 1.1.0 running
    const aborted = await api("POST", `/deployments/${id}/rollout/abort`, { reason: "enough" });
    expect(aborted.status, aborted.text).toBe(200);
    const canary = (await h.services.prisma.deploymentDevice.findFirstOrThrow({ where: { deploymentId: id, batchIndex: 0 } })).deviceId;
    for (const device of fleet) {
      const desired = await told(device);
      expect(desired).toHaveLength(1);
      expect(desired[0].slice(1)).toEqual(device.deviceId === canary ? ["install", "1.1.0"] : ["install", "1.0.0"]);
    }
  });

  it("stop: every device, on the new version or the old one, is told to remove the application once", async () => {
    const stopped = await api("POST", `/deployments/${id}/stop`, {});
    expect(stopped.status, stopped.text).toBe(200);
    expect(stopped.body.status).toBe("stopping");
    for (const device of fleet) expect((await told(device)).map((x) => x[1])).toEqual(["remove"]);
    for (const device of fleet) {
      const removals = (await agentHeartbeat(h, device)).filter((x) => x.action === "remove");
      await agentHeartbeat(h, device, removals.map((x) => ({ deploymentId: x.deploymentId, state: "removed" })));
    }
    expect((await api("GET", `/deployments/${id}`)).body.status).toBe("stopped");
    const running = await h.services.prisma.deployment.count({ where: { upgradedToId: id, status: { not: "stopped" } } });
    expect(running).toBe(0);
  });
});

describe("a device that rolls a failed upgrade back itself (agent/src/workloads.ts)", () => {
  /** The device's entries of the application, as its Deployments tab lists them: [deployment, version, state, told]. */
  async function entriesOf(device: EnrolledDevice): Promise<Array<[string, string, string, string | null]>> {
    const res = await api("GET", `/devices/${device.deviceId}/deployments?limit=50`);
    expect(res.status, res.text).toBe(200);
    return res.body.items.filter((x: { applicationId: string }) => x.applicationId === appId)
      .map((x: { deploymentId: string; version: string; state: string; desiredAction: string | null }) => [x.deploymentId, x.version, x.state, x.desiredAction]);
  }
  const failure = "install failed: container web exited with code 3; rolled back on the device: 1.0.0 runs again";

  it("an upgrade in place: the predecessor's entry runs again on that device, out of its desired state; reports of the update supersede it again", async () => {
    const fleet = await enrollFleet(h, acme.key, 2);
    const id = await createStarted("self-rollback", fleet);
    await runAll(fleet);
    expect((await api("PATCH", `/deployments/${id}`, { version: "1.1.0" })).status).toBe(200);
    const [{ id: oldId }] = await predecessorsOf(id);
    const [rolledBack, upgraded] = fleet;
    await agentHeartbeat(h, rolledBack, [{ deploymentId: id, state: "failed", message: failure, attempt: 1, rolledBackTo: { deploymentId: id, version: "1.0.0" } }]);
    await agentHeartbeat(h, upgraded, [{ deploymentId: id, state: "running", attempt: 1 }]);

    // the device runs 1.0.0 again: the service shows it, and still tells the device the update (its retries)
    expect(await entriesOf(rolledBack)).toEqual(expect.arrayContaining([[id, "1.1.0", "failed", "install"], [oldId, "1.0.0", "running", null]]));
    expect(await told(rolledBack)).toEqual([[id, "install", "1.1.0"]]);
    const entry = await h.services.prisma.deploymentDevice.findUniqueOrThrow({ where: { deploymentId_deviceId: { deploymentId: oldId, deviceId: rolledBack.deviceId } } });
    expect(entry.reason).toBe("rolled back to on the device: self-rollback 1.1.0 failed there");
    const old = await api("GET", `/deployments/${oldId}/devices`);
    expect(old.body.items.map((x: { deviceId: string; state: string }) => [x.deviceId, x.state]).sort()).toEqual(
      [[rolledBack.deviceId, "running"], [upgraded.deviceId, "superseded"]].sort());
    // the device that took the update is not touched
    expect(await entriesOf(upgraded)).toEqual(expect.arrayContaining([[id, "1.1.0", "running", "install"], [oldId, "1.0.0", "superseded", null]]));

    // the device installs the update again (a retry): it leaves 1.0.0, which is superseded again
    await agentHeartbeat(h, rolledBack, [{ deploymentId: id, state: "installing", attempt: 1 }]);
    expect(await entriesOf(rolledBack)).toEqual(expect.arrayContaining([[id, "1.1.0", "installing", "install"], [oldId, "1.0.0", "superseded", null]]));
    // and fails again, rolling back again
    await agentHeartbeat(h, rolledBack, [{ deploymentId: id, state: "failed", message: `${failure} (2)`, attempt: 1, rolledBackTo: { deploymentId: id, version: "1.0.0" } }]);
    expect(await entriesOf(rolledBack)).toEqual(expect.arrayContaining([[oldId, "1.0.0", "running", null]]));
  });

  it("an abort while the rolled-back device's retry has not started: the device is told the version it runs again, and the predecessor runs", async () => {
    const fleet = await enrollFleet(h, acme.key, 2);
    const id = await createStarted("rollback-abort", fleet, { type: "staged", canary: { count: 1 }, batches: [{ percent: 100 }], successThreshold: 100, failureThreshold: 100, autoAdvance: false });
    await runAll(fleet);
    await api("POST", `/deployments/${id}/rollout/approve`);
    await runAll(fleet);
    expect((await api("PATCH", `/deployments/${id}`, { version: "1.1.0" })).status).toBe(200);
    const [{ id: oldId }] = await predecessorsOf(id);
    const canaryId = (await h.services.prisma.deploymentDevice.findFirstOrThrow({ where: { deploymentId: id, batchIndex: 0 } })).deviceId;
    const canary = fleet.find((d) => d.deviceId === canaryId)!;
    const other = fleet.find((d) => d.deviceId !== canaryId)!;
    // the canary fails the update and brings 1.0.0 up again itself: the rollout pauses at its failure threshold
    await agentHeartbeat(h, canary, [{ deploymentId: id, state: "failed", message: failure, attempt: 1, rolledBackTo: { deploymentId: id, version: "1.0.0" } }]);
    expect((await api("GET", `/deployments/${id}/rollout`)).body.state).toBe("paused");
    expect(await entriesOf(canary)).toEqual(expect.arrayContaining([[id, "1.1.0", "failed", "install"], [oldId, "1.0.0", "running", null]]));
    // the operator retries it: attempt 2 is handed out, and the device has not started it yet
    const retried = await api("POST", `/deployments/${id}/rollout/retry-failed`, {});
    expect(retried.status, retried.text).toBe(200);
    expect(await told(canary)).toEqual([[id, "install", "1.1.0"]]);

    const aborted = await api("POST", `/deployments/${id}/rollout/abort`, { reason: "1.1.0 does not start" });
    expect(aborted.status, aborted.text).toBe(200);
    // the device runs 1.0.0 and is told so; the retry it never started is cancelled
    expect(await told(canary)).toEqual([[oldId, "install", "1.0.0"]]);
    expect(await entriesOf(canary)).toEqual(expect.arrayContaining([[id, "1.1.0", "cancelled", null], [oldId, "1.0.0", "running", "install"]]));
    const kept = await h.services.prisma.deploymentDevice.findUniqueOrThrow({ where: { deploymentId_deviceId: { deploymentId: oldId, deviceId: canary.deviceId } } });
    expect(kept.reason).toBe("the update rollout was aborted before this device started it: it keeps this version");
    // the device the update never reached keeps being told 1.0.0; the predecessor runs
    expect(await told(other)).toEqual([[oldId, "install", "1.0.0"]]);
    expect((await h.services.prisma.deployment.findUniqueOrThrow({ where: { id: oldId } })).status).toBe("running");
    // reports of 1.0.0 from the device are taken as its entry's
    await agentHeartbeat(h, canary, [{ deploymentId: oldId, state: "running" }]);
    expect(await entriesOf(canary)).toEqual(expect.arrayContaining([[oldId, "1.0.0", "running", "install"]]));
  });

  it("an upgrade by a second deployment: the first one's entry runs again; a release the report does not name, or another organization's, is left alone", async () => {
    const [device] = await enrollFleet(h, acme.key, 1);
    const first = await createStarted("first-of-two", [device]);
    await runAll([device]);
    const second = await api("POST", "/deployments", {
      name: "second-of-two", applicationId: appId, version: "1.1.0", profileId: "compose-main", parameters: { apiToken: TOKEN }, target: { deviceIds: [device.deviceId] },
    });
    expect((await api("POST", `/deployments/${second.body.id}/start`)).status).toBe(200);
    // a version the first deployment does not hold, and a deployment id of nothing here: no entry changes
    await agentHeartbeat(h, device, [{ deploymentId: second.body.id, state: "failed", message: failure, attempt: 1, rolledBackTo: { deploymentId: first, version: "0.9.0" } }]);
    await agentHeartbeat(h, device, [{ deploymentId: second.body.id, state: "failed", message: `${failure}.`, attempt: 1, rolledBackTo: { deploymentId: globex.org.id, version: "1.0.0" } }]);
    expect(await entriesOf(device)).toEqual(expect.arrayContaining([[second.body.id, "1.1.0", "failed", "install"], [first, "1.0.0", "superseded", null]]));
    await agentHeartbeat(h, device, [{ deploymentId: second.body.id, state: "failed", message: failure, attempt: 1, rolledBackTo: { deploymentId: first, version: "1.0.0" } }]);
    expect(await entriesOf(device)).toEqual(expect.arrayContaining([[second.body.id, "1.1.0", "failed", "install"], [first, "1.0.0", "running", null]]));
    // removing the second deployment takes the application off the device: the first one is superseded again
    expect((await api("DELETE", `/deployments/${second.body.id}`)).status).toBeLessThan(300);
    await agentHeartbeat(h, device, [{ deploymentId: second.body.id, state: "removed" }]);
    expect(await entriesOf(device)).toEqual(expect.arrayContaining([[first, "1.0.0", "superseded", null]]));
  });

  it("a malformed rolledBackTo is refused with 400 naming the field, and nothing is recorded", async () => {
    const [device] = await enrollFleet(h, acme.key, 1);
    const id = await createStarted("malformed-rollback", [device]);
    const res = await heartbeat(h, device, { deployments: [{ deploymentId: id, state: "failed", message: failure, rolledBackTo: { deploymentId: "not-a-uuid", version: "1.0.0" } }] });
    expect(res.status, res.text).toBe(400);
    expect(res.text).toMatch(/rolledBackTo/);
    expect((await h.services.prisma.deploymentDevice.findUniqueOrThrow({ where: { deploymentId_deviceId: { deploymentId: id, deviceId: device.deviceId } } })).state).toBe("pending");
  });
});
