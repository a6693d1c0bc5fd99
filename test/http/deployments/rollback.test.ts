// Rollback through HTTP: each device's version history, the rollback target (answered
// without changing anything), rolling one device back (a started all-at-once deployment of
// the last version that ran successfully, with the original parameters and secret, that
// supersedes the current one), group rollback by selector with a dry run, refusals (409 with
// nothing to roll back to, 404 across tenants and for unknown ids, 403 without
// deployments:write, 400 naming the fields) and the audit trail.
//
// The fleet (all enrolled over the real protocol; ring r1 unless said):
//   d0, d1: 1.0.0 running, then 2.0.0 failed      -> back to 1.0.0
//   d2:     1.0.0 running, then 2.0.0 running     -> back to 1.0.0 (a group rollback takes every matched device back)
//   d3:     1.0.0 failed,  then 2.0.0 running     -> nothing to roll back to
//   d4:     never given the application           -> not part of a group rollback
//   e0 (ring r2): like d1, outside the selector   -> untouched by the group rollback
import crypto from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { expectSecured } from "../../support/security.js";
import type { EnrolledDevice } from "../agent/fleet-support.js";
import { agentHeartbeat, enrollFleet, importVersion, type DesiredEntry } from "./support.js";

let h: Harness;
let acme: Tenant;
let globex: Tenant;
let appId: string;
let d: EnrolledDevice[];
let e0: EnrolledDevice;
let v1: string;
let v2: string;
const SECRET_V1 = "tok-v1-" + "s3cr3t".repeat(3);
const SECRET_V2 = "tok-v2-" + "0ther".repeat(3);

beforeAll(async () => {
  h = await createHarness();
  acme = await h.createTenant("Acme Rollback");
  globex = await h.createTenant("Globex Rollback");
  appId = await importVersion(h, acme.org.id, { version: "1.0.0" });
  expect(await importVersion(h, acme.org.id, { version: "2.0.0" })).toBe(appId);
  d = await enrollFleet(h, acme.key, 5, { labels: { ring: "r1" } });
  [e0] = await enrollFleet(h, acme.key, 1, { labels: { ring: "r2" } });
}, 120_000);

afterAll(async () => {
  if (process.env.DEBUG_LOGS) console.log(h.logs.filter((l) => /"level":(50|40)/.test(l)).slice(0, 5).join("\n"));
  await h?.close();
});

const deployed = () => [d[0], d[1], d[2], d[3], e0].map((x) => x.deviceId);

async function deployAndStart(version: string, parameters: Record<string, unknown>): Promise<string> {
  const created = await h.api("POST", "/api/v1/deployments", {
    key: acme.key,
    body: { name: `gateway-${version}`, applicationId: appId, version, profileId: "compose-main", parameters, target: { deviceIds: deployed() } },
  });
  expect(created.status, created.text).toBe(201);
  const started = await h.api("POST", `/api/v1/deployments/${created.body.id}/start`, { key: acme.key });
  expect(started.status, started.text).toBe(200);
  expect(started.body).toMatchObject({ status: "running", rolloutState: "in_progress" });
  return created.body.id as string;
}

/** The device's desired entries for the application. */
async function desiredOf(device: EnrolledDevice): Promise<DesiredEntry[]> {
  return (await agentHeartbeat(h, device)).filter((x) => x.applicationId === appId);
}

/** Everything a rollback could change, to prove that a read or a dry run changed nothing. */
async function snapshot(): Promise<string> {
  const p = h.services.prisma;
  const organizationId = acme.org.id;
  return JSON.stringify(
    await Promise.all([
      p.deployment.findMany({ where: { organizationId }, orderBy: { id: "asc" } }),
      p.deploymentDevice.findMany({ where: { organizationId }, orderBy: [{ deploymentId: "asc" }, { deviceId: "asc" }] }),
      p.deviceVersionHistory.findMany({ where: { organizationId }, orderBy: { id: "asc" } }),
      p.deploymentBatch.count(),
    ]),
  );
}

const rollback = (device: string, opts: { key?: string; body?: unknown } = {}) =>
  h.api("POST", `/api/v1/devices/${device}/rollback`, { key: opts.key ?? acme.key, body: opts.body ?? {} });
const target = (device: string, key = acme.key, query = "") => h.api("GET", `/api/v1/devices/${device}/rollback-target${query}`, { key });
const history = (device: string, key = acme.key, query = "") => h.api("GET", `/api/v1/devices/${device}/deployment-history${query}`, { key });
const groupRollback = (body: unknown, key = acme.key) => h.api("POST", "/api/v1/groups/rollback", { key, body });

describe("setup: 1.0.0 everywhere, then 2.0.0 over it", () => {
  it("1.0.0 runs on d0, d1, d2 and e0 and fails on d3; the version history records each", async () => {
    v1 = await deployAndStart("1.0.0", { apiToken: SECRET_V1, pollSeconds: 45, mode: "safe" });
    for (const device of [d[0], d[1], d[2], e0]) await agentHeartbeat(h, device, [{ deploymentId: v1, state: "running" }]);
    await agentHeartbeat(h, d[3], [{ deploymentId: v1, state: "failed", message: "image pull failed" }]);
    const rows = await h.services.prisma.deviceVersionHistory.findMany({ where: { deploymentId: v1 } });
    expect(rows).toHaveLength(5);
    expect(rows.filter((r) => r.succeeded).map((r) => r.deviceId).sort()).toEqual([d[0], d[1], d[2], e0].map((x) => x.deviceId).sort());
    expect(await desiredOf(d[4])).toEqual([]);
  });

  it("2.0.0 to the same devices supersedes the 1.0.0 entries: they leave the desired state", async () => {
    v2 = await deployAndStart("2.0.0", { apiToken: SECRET_V2 });
    const old = await h.services.prisma.deploymentDevice.findMany({ where: { deploymentId: v1 } });
    expect(old).toHaveLength(5);
    for (const entry of old) {
      expect(entry).toMatchObject({ state: "superseded", desiredAction: null });
      expect(entry.reason).toContain("gateway-2.0.0");
    }
    const desired = await desiredOf(d[0]);
    expect(desired.map((x) => [x.deploymentId, x.action, x.version])).toEqual([[v2, "install", "2.0.0"]]);
    expect(desired[0].parameters).toEqual({ gateway: { API_TOKEN: SECRET_V2, POLL_SECONDS: 30, MODE: "fast" } });

    for (const device of [d[0], d[1], e0]) await agentHeartbeat(h, device, [{ deploymentId: v2, state: "failed", message: "crash loop" }]);
    for (const device of [d[2], d[3]]) await agentHeartbeat(h, device, [{ deploymentId: v2, state: "running" }]);
  });
});

describe("deployment history", () => {
  it("lists both versions newest first, with whether each ran successfully", async () => {
    const res = await history(d[0].deviceId);
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ total: 2, hasMore: false });
    expect(res.body.items.map((x: { version: string; outcome: string; succeeded: boolean; deploymentId: string }) => [x.version, x.outcome, x.succeeded, x.deploymentId])).toEqual([
      ["2.0.0", "failed", false, v2],
      ["1.0.0", "running", true, v1],
    ]);
    expect(res.body.items[0]).toMatchObject({
      applicationId: appId, applicationName: "Vision Gateway", profileId: "compose-main", deploymentName: "gateway-2.0.0", message: "crash loop",
    });
    expect(new Date(res.body.items[0].finishedAt) >= new Date(res.body.items[1].finishedAt)).toBe(true);

    const d3 = await history(d[3].deviceId);
    expect(d3.body.items.map((x: { version: string; succeeded: boolean }) => [x.version, x.succeeded])).toEqual([["2.0.0", true], ["1.0.0", false]]);
    expect(d3.body.items[1].message).toBe("image pull failed");
  });

  it("pages and filters by application", async () => {
    const page = await history(d[0].deviceId, acme.key, "?limit=1&offset=1");
    expect(page.body).toMatchObject({ total: 2, hasMore: false });
    expect(page.body.items.map((x: { version: string }) => x.version)).toEqual(["1.0.0"]);
    const first = await history(d[0].deviceId, acme.key, "?limit=1");
    expect(first.body).toMatchObject({ total: 2, hasMore: true });
    const other = await history(d[0].deviceId, acme.key, `?applicationId=${crypto.randomUUID()}`);
    expect(other.body).toMatchObject({ total: 0, items: [] });
    expect((await history(d[4].deviceId)).body).toMatchObject({ total: 0, items: [] });
  });
});

describe("a device's deployments: GET /devices/{id}/deployments", () => {
  const entries = (device: string, query = "", key = acme.key) => h.api("GET", `/api/v1/devices/${device}/deployments${query}`, { key });

  it("lists the desired state first (2.0.0, told to install), then the entries the device no longer carries (1.0.0, superseded)", async () => {
    const res = await entries(d[0].deviceId);
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ total: 2, hasMore: false });
    expect(res.body.items.map((x: { deploymentId: string; desiredAction: string | null; state: string }) => [x.deploymentId, x.desiredAction, x.state])).toEqual([
      [v2, "install", "failed"],
      [v1, null, "superseded"],
    ]);
    expect(res.body.items[0]).toMatchObject({
      deploymentName: "gateway-2.0.0", deploymentStatus: "running", rolloutState: expect.any(String),
      applicationId: appId, applicationName: "Vision Gateway", version: "2.0.0", profileId: "compose-main", message: "crash loop", batchIndex: null,
    });
    expect(res.body.items[1].reason).toContain("gateway-2.0.0");
    // the heartbeat carries exactly the desired entries
    expect((await desiredOf(d[0])).map((x) => x.deploymentId)).toEqual([v2]);
  });

  it("filters by desired, pages, and answers an empty page for a device no deployment targeted", async () => {
    const desired = await entries(d[0].deviceId, "?desired=true");
    expect(desired.body.items.map((x: { deploymentId: string }) => x.deploymentId)).toEqual([v2]);
    expect(desired.body.total).toBe(1);
    const others = await entries(d[0].deviceId, "?desired=false");
    expect(others.body.items.map((x: { deploymentId: string }) => x.deploymentId)).toEqual([v1]);
    const second = await entries(d[0].deviceId, "?limit=1&offset=1");
    expect(second.body).toMatchObject({ total: 2, hasMore: false });
    expect(second.body.items.map((x: { deploymentId: string }) => x.deploymentId)).toEqual([v1]);
    expect((await entries(d[4].deviceId)).body).toEqual({ items: [], total: 0, hasMore: false });
    const bad = await entries(d[0].deviceId, "?desired=maybe");
    expect(bad.status).toBe(400);
    expect(JSON.stringify(bad.body.issues)).toContain("desired");
  });

  it("is secured: 401, 403 without deployments:read, 404 across tenants and for an unknown device", async () => {
    const path = `/api/v1/devices/${d[0].deviceId}/deployments`;
    await expectSecured(h, acme, globex, { method: "GET", path, permission: "deployments:read", foreignPath: path });
    expect((await entries(crypto.randomUUID())).status).toBe(404);
  });
});

describe("rollback target", () => {
  it("answers 1.0.0 for a device on 2.0.0, and changes nothing", async () => {
    const before = await snapshot();
    for (const query of ["", `?applicationId=${appId}`]) {
      const res = await target(d[0].deviceId, acme.key, query);
      expect(res.status, res.text).toBe(200);
      expect(res.body).toEqual({
        deviceId: d[0].deviceId, applicationId: appId, currentVersion: "2.0.0", pendingVersion: null, targetVersion: "1.0.0", targetProfileId: "compose-main", available: true,
      });
    }
    // a device that runs 2.0.0 fine still has 1.0.0 to go back to
    expect((await target(d[2].deviceId)).body).toMatchObject({ currentVersion: "2.0.0", targetVersion: "1.0.0", available: true });
    expect(await snapshot()).toBe(before);
  });

  it("answers no target for a device on which no other version ran successfully", async () => {
    const res = await target(d[3].deviceId);
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ currentVersion: "2.0.0", targetVersion: null, targetProfileId: null, available: false });
  });

  it("a device that never ran anything: 409 without an application, no target with one", async () => {
    const res = await target(d[4].deviceId);
    expect(res.status, res.text).toBe(409);
    expect(res.text).toContain("no deployment history");
    const named = await target(d[4].deviceId, acme.key, `?applicationId=${appId}`);
    expect(named.status, named.text).toBe(200);
    expect(named.body).toMatchObject({ currentVersion: null, targetVersion: null, available: false });
  });
});

describe("device rollback", () => {
  let rollbackId: string;

  it("creates a started all-at-once rollback deployment of 1.0.0 that supersedes 2.0.0", async () => {
    const res = await rollback(d[0].deviceId);
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ deviceId: d[0].deviceId, status: "rolled_back", fromVersion: "2.0.0", toVersion: "1.0.0", reason: null });
    expect(res.body.deploymentId).toEqual(expect.any(String));
    rollbackId = res.body.deploymentId;

    const dep = await h.api("GET", `/api/v1/deployments/${rollbackId}`, { key: acme.key });
    expect(dep.status, dep.text).toBe(200);
    expect(dep.body).toMatchObject({
      applicationId: appId, version: "1.0.0", profileId: "compose-main", status: "running", rolloutState: "in_progress",
      strategy: { type: "all-at-once" }, target: { deviceIds: [d[0].deviceId] },
      parameters: { apiToken: "********", pollSeconds: 45, mode: "safe" }, secretParameterNames: ["apiToken"],
      progress: { total: 1, pending: 1 },
    });
    expect(dep.body.name).toMatch(/^rollback /);
    expect(dep.text).not.toContain(SECRET_V1);

    const entry = await h.services.prisma.deploymentDevice.findFirstOrThrow({ where: { deploymentId: v2, deviceId: d[0].deviceId } });
    expect(entry).toMatchObject({ state: "superseded", desiredAction: null });
    // the other devices of 2.0.0 keep it
    expect(await h.services.prisma.deploymentDevice.count({ where: { deploymentId: v2, desiredAction: "install" } })).toBe(4);
  });

  it("the device's next heartbeat gets 1.0.0 with the original parameters and secret, and no 2.0.0 entry", async () => {
    const desired = await desiredOf(d[0]);
    expect(desired).toHaveLength(1);
    expect(desired[0]).toMatchObject({
      deploymentId: rollbackId, action: "install", version: "1.0.0", profile: { id: "compose-main" },
      parameters: { gateway: { API_TOKEN: SECRET_V1, POLL_SECONDS: 45, MODE: "safe" } },
    });
    expect(desired.some((x) => x.version === "2.0.0" || x.deploymentId === v2)).toBe(false);
  });

  it("while the rollback is on its way, the target reports it pending, never as the current version, and is not rolled back to twice", async () => {
    for (const state of [null, "downloading", "installing"]) {
      if (state) await agentHeartbeat(h, d[0], [{ deploymentId: rollbackId, state }]);
      expect((await target(d[0].deviceId)).body, `rollback ${state ?? "pending"}`).toMatchObject({
        currentVersion: "2.0.0", pendingVersion: "1.0.0", targetVersion: null, available: false,
      });
    }
    const again = await rollback(d[0].deviceId);
    expect(again.status, again.text).toBe(409);
    expect(again.body.message).toBe("No version to roll back to: 1.0.0 is already on its way to this device (told to install it, not running yet) (current: 2.0.0)");
  });

  it("once the device runs it, the history shows the rollback on top and the target moves on", async () => {
    await agentHeartbeat(h, d[0], [{ deploymentId: rollbackId, state: "running" }]);
    const res = await history(d[0].deviceId);
    expect(res.body.items.map((x: { version: string; succeeded: boolean; deploymentId: string }) => [x.version, x.succeeded, x.deploymentId])).toEqual([
      ["1.0.0", true, rollbackId],
      ["2.0.0", false, v2],
      ["1.0.0", true, v1],
    ]);
    // on 1.0.0 now, and 2.0.0 never ran successfully here: nothing to roll back to
    expect((await target(d[0].deviceId)).body).toMatchObject({ currentVersion: "1.0.0", pendingVersion: null, targetVersion: null, available: false });
    expect((await rollback(d[0].deviceId)).status).toBe(409);
  });

  it("answers 409 for a device with no other successful version, and creates nothing", async () => {
    const before = await snapshot();
    const res = await rollback(d[3].deviceId);
    expect(res.status, res.text).toBe(409);
    expect(res.body.code).toBe("CONFLICT");
    expect(res.body.message).toContain("No version to roll back to");
    expect(res.body.message).toContain("2.0.0");
    const never = await rollback(d[4].deviceId);
    expect(never.status, never.text).toBe(409);
    expect(await snapshot()).toBe(before);
  });

  it("answers 404 for another tenant's device and for unknown ids, 400 for an id that is no uuid", async () => {
    const before = await snapshot();
    for (const [device, key] of [[d[1].deviceId, globex.key], [crypto.randomUUID(), acme.key]]) {
      const r = await rollback(device, { key });
      expect(r.status, r.text).toBe(404);
      expect(r.body.code).toBe("NOT_FOUND");
      expect((await target(device, key)).status).toBe(404);
      expect((await history(device, key)).status).toBe(404);
    }
    expect((await rollback("not-a-uuid")).status).toBe(400);
    expect((await target("not-a-uuid")).status).toBe(400);
    expect((await rollback(d[1].deviceId, { body: { applicationId: "nope" } })).status).toBe(400);
    expect(await snapshot()).toBe(before);
  });

  it("answers 403 to a key with only deployments:read, which may still read the target and the history", async () => {
    const reader = await h.createKey(acme.org.id, ["deployments:read"]);
    const before = await snapshot();
    const res = await rollback(d[1].deviceId, { key: reader });
    expect(res.status, res.text).toBe(403);
    expect(res.body.code).toBe("FORBIDDEN");
    const group = await groupRollback({ labelSelector: { ring: "r1" }, applicationId: appId, dryRun: true }, reader);
    expect(group.status, group.text).toBe(403);
    expect(await snapshot()).toBe(before);
    expect((await target(d[1].deviceId, reader)).status).toBe(200);
    expect((await history(d[1].deviceId, reader)).status).toBe(200);
  });
});

describe("security", () => {
  it("every rollback operation answers 401 without credentials, 403 without its permission, 404 across tenants", async () => {
    const before = await snapshot();
    const id = d[1].deviceId;
    const cases = [
      { method: "POST", path: `/api/v1/devices/${id}/rollback`, body: {}, permission: "deployments:write", foreignPath: `/api/v1/devices/${id}/rollback` },
      { method: "GET", path: `/api/v1/devices/${id}/rollback-target`, permission: "deployments:read", foreignPath: `/api/v1/devices/${id}/rollback-target` },
      { method: "GET", path: `/api/v1/devices/${id}/deployment-history`, permission: "deployments:read", foreignPath: `/api/v1/devices/${id}/deployment-history` },
      { method: "POST", path: "/api/v1/groups/rollback", body: { labelSelector: { ring: "r1" }, applicationId: appId, dryRun: false }, permission: "deployments:write" },
    ];
    for (const c of cases) await expectSecured(h, acme, globex, c);
    expect(await snapshot()).toBe(before);
  });
});

describe("group rollback", () => {
  const selector = { labelSelector: { ring: "r1" } };
  let dryRunReason: string;

  it("a dry run reports per device and changes nothing", async () => {
    const before = await snapshot();
    const res = await groupRollback({ ...selector, applicationId: appId, dryRun: true });
    expect(res.status, res.text).toBe(200);
    expect(await snapshot()).toBe(before);
    const byDevice = Object.fromEntries(res.body.devices.map((x: { deviceId: string }) => [x.deviceId, x]));
    expect(byDevice[d[0].deviceId]).toMatchObject({ status: "no_target", fromVersion: "1.0.0", toVersion: null, deploymentId: null });
    expect(byDevice[d[1].deviceId]).toMatchObject({ status: "rolled_back", fromVersion: "2.0.0", toVersion: "1.0.0", deploymentId: null, reason: null });
    expect(byDevice[d[2].deviceId]).toMatchObject({ status: "rolled_back", fromVersion: "2.0.0", toVersion: "1.0.0", deploymentId: null });
    expect(byDevice[d[3].deviceId]).toMatchObject({ status: "no_target", fromVersion: "2.0.0", toVersion: null, deploymentId: null });
    expect(byDevice[d[3].deviceId].reason).toEqual(expect.any(String));
    dryRunReason = byDevice[d[3].deviceId].reason;
    // e0 is outside the selector
    expect(byDevice[e0.deviceId]).toBeUndefined();
    // d4 never ran the application: "Devices that never ran the application are not listed" (the operation's description)
    expect(byDevice[d[4].deviceId], "a device that never ran the application is listed").toBeUndefined();
    expect(res.body).toMatchObject({ dryRun: true, matched: 4, rolledBack: 2, withoutTarget: 2 });
  });

  it("rolls back every matched device that has a target, in one deployment per version and source", async () => {
    const deploymentsBefore = await h.services.prisma.deployment.count({ where: { organizationId: acme.org.id } });
    const res = await groupRollback({ ...selector, applicationId: appId, dryRun: false });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ dryRun: false, rolledBack: 2 });
    const byDevice = Object.fromEntries(res.body.devices.map((x: { deviceId: string }) => [x.deviceId, x]));
    expect(byDevice[d[1].deviceId]).toMatchObject({ status: "rolled_back", fromVersion: "2.0.0", toVersion: "1.0.0" });
    expect(byDevice[d[2].deviceId]).toMatchObject({ status: "rolled_back", fromVersion: "2.0.0", toVersion: "1.0.0" });
    expect(byDevice[d[0].deviceId]).toMatchObject({ status: "no_target", deploymentId: null });
    expect(byDevice[d[3].deviceId]).toMatchObject({ status: "no_target", deploymentId: null });
    const deploymentId = byDevice[d[1].deviceId].deploymentId;
    expect(deploymentId).toEqual(expect.any(String));
    expect(byDevice[d[2].deviceId].deploymentId).toBe(deploymentId);
    expect(await h.services.prisma.deployment.count({ where: { organizationId: acme.org.id } })).toBe(deploymentsBefore + 1);

    const dep = await h.api("GET", `/api/v1/deployments/${deploymentId}`, { key: acme.key });
    expect(dep.body).toMatchObject({ version: "1.0.0", status: "running", strategy: { type: "all-at-once" }, progress: { total: 2 } });
    expect([...dep.body.target.deviceIds].sort()).toEqual([d[1].deviceId, d[2].deviceId].sort());

    for (const device of [d[1], d[2]]) {
      const desired = await desiredOf(device);
      expect(desired.map((x) => [x.deploymentId, x.version])).toEqual([[deploymentId, "1.0.0"]]);
      expect(desired[0].parameters.gateway).toEqual({ API_TOKEN: SECRET_V1, POLL_SECONDS: 45, MODE: "safe" });
    }
    // outside the selector: still told to run 2.0.0; no target: unchanged
    expect((await desiredOf(e0)).map((x) => [x.deploymentId, x.version])).toEqual([[v2, "2.0.0"]]);
    expect((await desiredOf(d[3])).map((x) => [x.deploymentId, x.version])).toEqual([[v2, "2.0.0"]]);
    // "dryRun answers the same": the same reason as the dry run gave
    expect(byDevice[d[3].deviceId].reason, "the dry run gives another reason").toBe(dryRunReason);
  });

  it("by device ids too; devices whose rollback to 1.0.0 is on its way have no target (they still run 2.0.0)", async () => {
    const res = await groupRollback({ deviceIds: [d[1].deviceId, e0.deviceId], applicationId: appId, dryRun: true });
    expect(res.status, res.text).toBe(200);
    const byDevice = Object.fromEntries(res.body.devices.map((x: { deviceId: string }) => [x.deviceId, x]));
    expect(byDevice[d[1].deviceId]).toMatchObject({ status: "no_target", fromVersion: "2.0.0", reason: "1.0.0 is already on its way to this device (told to install it, not running yet)" });
    expect(byDevice[e0.deviceId]).toMatchObject({ status: "rolled_back", fromVersion: "2.0.0", toVersion: "1.0.0" });
  });

  it("another tenant's selector and device ids match nothing of this one; its application is unknown there", async () => {
    const before = await snapshot();
    const bySelector = await groupRollback({ ...selector, applicationId: appId, dryRun: true }, globex.key);
    expect(bySelector.status, bySelector.text).toBe(200);
    expect(bySelector.body).toMatchObject({ matched: 0, rolledBack: 0, devices: [] });
    const byIds = await groupRollback({ deviceIds: [d[1].deviceId], applicationId: appId, dryRun: true }, globex.key);
    expect(byIds.status, byIds.text).toBe(200);
    expect(byIds.body).toMatchObject({ matched: 0, devices: [] });
    const real = await groupRollback({ ...selector, applicationId: appId, dryRun: false }, globex.key);
    expect(real.status, real.text).toBe(400);
    expect(real.text).toContain("applicationId");
    expect(await snapshot()).toBe(before);
  });

  it.each([
    ["no target", { applicationId: "APP" }, "labelSelector"],
    ["both targets", { applicationId: "APP", labelSelector: { ring: "r1" }, deviceIds: ["DEV"] }, "labelSelector"],
    ["an empty selector", { applicationId: "APP", labelSelector: {} }, "labelSelector"],
    ["no applicationId", { labelSelector: { ring: "r1" } }, "applicationId"],
    ["an applicationId that is no uuid", { labelSelector: { ring: "r1" }, applicationId: "vision-gateway" }, "applicationId"],
    ["dryRun as text", { labelSelector: { ring: "r1" }, applicationId: "APP", dryRun: "true" }, "dryRun"],
    ["a device id that is no uuid", { deviceIds: ["d0"], applicationId: "APP" }, "deviceIds"],
  ])("refuses a body with %s: 400 naming %s, nothing changes", async (_case, raw, field) => {
    const body = JSON.parse(JSON.stringify(raw).replaceAll("APP", appId).replaceAll("DEV", d[1].deviceId));
    const before = await snapshot();
    const res = await groupRollback(body);
    expect(res.status, res.text).toBe(400);
    expect(res.body.code).toBe("BAD_REQUEST");
    const named = [...(res.body.issues ?? []).map((i: { path: unknown; message: string }) => `${JSON.stringify(i.path)} ${i.message}`), res.body.message].join(" ");
    expect(named).toContain(field);
    expect(await snapshot()).toBe(before);
  });
});

describe("audit", () => {
  it("records each rollback, in the same transaction: refused ones leave no success entry", async () => {
    const entries = await h.services.prisma.auditEntry.findMany({
      where: { organizationId: acme.org.id, action: { in: ["devices.rollback", "groups.rollback"] }, outcome: "success" },
      orderBy: { createdAt: "asc" },
    });
    const deviceEntries = entries.filter((x) => x.action === "devices.rollback");
    expect(deviceEntries.map((x) => [x.entityType, x.entityId])).toEqual([["device", d[0].deviceId]]);
    expect(deviceEntries[0].actorType).toBe("api_key");
    // the dry runs and the real group rollback of acme
    expect(entries.filter((x) => x.action === "groups.rollback").length).toBeGreaterThanOrEqual(3);
    expect(JSON.stringify(entries)).not.toContain(SECRET_V1);

    const refused = await h.services.prisma.auditEntry.count({ where: { action: "devices.rollback", entityId: d[3].deviceId, outcome: "success" } });
    expect(refused).toBe(0);
    const denied = await h.services.prisma.auditEntry.count({ where: { organizationId: acme.org.id, outcome: "denied" } });
    expect(denied).toBeGreaterThan(0);
  });

  it("the audit API shows them", async () => {
    const res = await h.api("GET", "/api/v1/audit?action=devices.rollback", { key: acme.key });
    expect(res.status, res.text).toBe(200);
    expect(res.body.items.map((x: { entityId: string }) => x.entityId)).toEqual([d[0].deviceId]);
    const byEntity = await h.api("GET", `/api/v1/audit/entity/device/${d[0].deviceId}`, { key: acme.key });
    expect(byEntity.body.items.some((x: { action: string }) => x.action === "devices.rollback")).toBe(true);
    const group = await h.api("GET", "/api/v1/audit?action=groups.rollback", { key: acme.key });
    expect(group.body.total).toBeGreaterThanOrEqual(3);
  });
});

describe("edge cases", () => {
  it("a device that ran several applications needs the application named (400), and then answers per application", async () => {
    const other = await importVersion(h, acme.org.id, { appKey: "edge-agent", version: "1.0.0", parametersYaml: "  {}\n" });
    const created = await h.api("POST", "/api/v1/deployments", {
      key: acme.key,
      body: { name: "edge-agent-1.0.0", applicationId: other, version: "1.0.0", profileId: "compose-main", target: { deviceIds: [d[3].deviceId] } },
    });
    expect(created.status, created.text).toBe(201);
    expect((await h.api("POST", `/api/v1/deployments/${created.body.id}/start`, { key: acme.key })).status).toBe(200);
    await agentHeartbeat(h, d[3], [{ deploymentId: created.body.id, state: "running" }]);
    // the other application's entry does not supersede this one's
    expect((await desiredOf(d[3])).map((x) => x.deploymentId)).toEqual([v2]);

    const res = await target(d[3].deviceId);
    expect(res.status, res.text).toBe(400);
    expect(res.text).toContain("applicationId");
    expect((await rollback(d[3].deviceId)).status).toBe(400);
    expect((await target(d[3].deviceId, acme.key, `?applicationId=${other}`)).body).toMatchObject({ applicationId: other, currentVersion: "1.0.0", available: false });
    expect((await target(d[3].deviceId, acme.key, `?applicationId=${appId}`)).body).toMatchObject({ applicationId: appId, currentVersion: "2.0.0", available: false });
  });

  it("never hands a device the rolled-back version without its required parameters, once the deployment that ran it was deleted", async () => {
    // e0 ran 1.0.0 (deployment v1, with apiToken) and failed 2.0.0; v1 is deleted, its parameter values with it
    const deleted = await h.api("DELETE", `/api/v1/deployments/${v1}?force=true`, { key: acme.key });
    expect(deleted.status, deleted.text).toBe(200);
    expect(deleted.body.deleted).toBe(true);
    expect((await target(e0.deviceId)).body).toMatchObject({ currentVersion: "2.0.0", targetVersion: "1.0.0" });

    const res = await rollback(e0.deviceId);
    if (res.status === 200) {
      // rolled back: then with a value for the required apiToken
      const desired = await desiredOf(e0);
      const entry = desired.find((x) => x.deploymentId === res.body.deploymentId)!;
      expect(entry.version).toBe("1.0.0");
      expect(entry.parameters.gateway, "the rollback deployment renders without the required apiToken").toHaveProperty("API_TOKEN");
    } else {
      // or refused, saying why, changing nothing
      expect(res.status, res.text).toBe(409);
      expect((await desiredOf(e0)).map((x) => x.deploymentId)).toEqual([v2]);
    }
  });
});
