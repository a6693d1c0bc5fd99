// Deployments through HTTP: creation rules (parameters against the manifest's declarations,
// secret values encrypted and never shown, profile, version and target checks), list,
// statistics, update only while not running, an all-at-once start delivered through the
// heartbeat (architecture-ineligible devices skipped), progress from agent reports and the
// version history, stop / delete with the removal devices confirm (or an operator forces),
// tenant isolation and permissions.
import crypto from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { expectSecured } from "../../support/security.js";
import type { EnrolledDevice } from "../agent/fleet-support.js";
import { evaluateRulesOnce } from "../../../src/modules/alerts/evaluate.js";
import { agentHeartbeat, enrollFleet, importVersion } from "./support.js";

let h: Harness;
let acme: Tenant;
let globex: Tenant;
let appId: string;
let arm: EnrolledDevice[];
let x86: EnrolledDevice[];
const SECRET = "tok-" + "s3cr3t".repeat(4);

beforeAll(async () => {
  h = await createHarness();
  acme = await h.createTenant("Acme Deploy");
  globex = await h.createTenant("Globex Deploy");
  appId = await importVersion(h, acme.org.id, { version: "1.0.0", architectures: ["arm64"] });
  await importVersion(h, acme.org.id, { version: "1.1.0", architectures: ["arm64"] });
  arm = await enrollFleet(h, acme.key, 4, { arch: "aarch64", labels: { site: "berlin" } });
  x86 = await enrollFleet(h, acme.key, 1, { arch: "x86_64", labels: { site: "berlin" } });
});

afterAll(async () => {
  if (process.env.DEBUG_LOGS) console.log(h.logs.filter((l) => /"level":(50|40)/.test(l)).slice(0, 5).join("\n"));
  await h?.close();
});

function body(overrides: Record<string, unknown> = {}) {
  return {
    name: `gateway-${Math.random().toString(36).slice(2, 8)}`,
    applicationId: appId,
    version: "1.0.0",
    profileId: "compose-main",
    parameters: { apiToken: SECRET, pollSeconds: 60 },
    target: { labelSelector: { site: "berlin" } },
    ...overrides,
  };
}

async function create(overrides: Record<string, unknown> = {}, key = acme.key) {
  return h.api("POST", "/api/v1/deployments", { key, body: body(overrides) });
}

describe("create", () => {
  it("creates a draft, stores the secret parameter encrypted and never shows it", async () => {
    const res = await create({ name: "first" });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({
      name: "first", status: "draft", rolloutState: "draft", version: "1.0.0", profileId: "compose-main", applicationName: "Vision Gateway",
      parameters: { pollSeconds: 60, apiToken: "********" }, secretParameterNames: ["apiToken"],
      target: { labelSelector: { site: "berlin" } }, strategy: { type: "all-at-once" },
      progress: { total: 0 },
    });
    expect(res.text).not.toContain(SECRET);
    const row = await h.services.prisma.deployment.findUniqueOrThrow({ where: { id: res.body.id } });
    expect(row.secretParameters).toMatch(/^v1:/);
    expect(row.secretParameters).not.toContain(SECRET);
    expect(JSON.stringify(row.parameters)).not.toContain(SECRET);
    const got = await h.api("GET", `/api/v1/deployments/${res.body.id}`, { key: acme.key });
    expect(got.status).toBe(200);
    expect(got.text).not.toContain(SECRET);
    // nor in the audit trail
    const audit = await h.services.prisma.auditEntry.findMany({ where: { entityId: res.body.id } });
    expect(audit.length).toBeGreaterThan(0);
    expect(JSON.stringify(audit)).not.toContain(SECRET);
  });

  it("answers 409 for a name taken in the organization, and allows it in another", async () => {
    expect((await create({ name: "dup" })).status).toBe(201);
    const again = await create({ name: "dup" });
    expect(again.status).toBe(409);
    const globexApp = await importVersion(h, globex.org.id, { version: "1.0.0" });
    const other = await h.api("POST", "/api/v1/deployments", { key: globex.key, body: body({ name: "dup", applicationId: globexApp }) });
    expect(other.status, other.text).toBe(201);
  });

  it.each([
    [{ parameters: { apiToken: SECRET, nope: 1 } }, "parameters.nope"],
    [{ parameters: { pollSeconds: 60 } }, "parameters.apiToken: required"],
    [{ parameters: { apiToken: SECRET, pollSeconds: 1 } }, "parameters.pollSeconds: must be at least 5"],
    [{ parameters: { apiToken: SECRET, pollSeconds: 7.5 } }, "parameters.pollSeconds: must be an integer"],
    [{ parameters: { apiToken: SECRET, mode: "turbo" } }, "parameters.mode: must be one of fast, safe"],
    [{ parameters: { apiToken: 42 } }, "parameters.apiToken: must be text"],
    [{ profileId: "helm-nope" }, "profileId"],
    [{ version: "9.9.9" }, "version"],
    [{ applicationId: "00000000-0000-4000-8000-000000000000" }, "applicationId"],
    [{ target: { deviceIds: ["00000000-0000-4000-8000-000000000001"] } }, "target.deviceIds"],
  ])("refuses %j with 400 naming %s, and stores nothing", async (overrides, field) => {
    const before = await h.services.prisma.deployment.count();
    const res = await create(overrides);
    expect(res.status, res.text).toBe(400);
    expect(res.text).toContain(field);
    expect(await h.services.prisma.deployment.count()).toBe(before);
  });

  it.each([
    [{ target: {} }, "target"],
    [{ target: { labelSelector: { site: "berlin" }, deviceIds: [crypto.randomUUID()] } }, "target"],
    [{ target: { labelSelector: {} } }, "labelSelector"],
    [{ strategy: { type: "staged", canary: { count: 1 }, successThreshold: 150 } }, "successThreshold"],
    [{ strategy: { type: "staged", canary: { percent: 0 } } }, "canary"],
    [{ strategy: { type: "staged", canary: { count: 1 }, batchTimeoutSeconds: 5 } }, "batchTimeoutSeconds"],
    [{ strategy: { type: "rolling" } }, "strategy"],
    [{ name: "" }, "name"],
  ])("refuses the shape %j with 400 naming %s", async (overrides, field) => {
    const res = await create(overrides);
    expect(res.status, res.text).toBe(400);
    expect(res.text).toContain(field);
  });
});

describe("all-at-once lifecycle", () => {
  let id: string;

  it("starts: eligible devices get the version with rendered parameters, the x86 device is skipped", async () => {
    const created = await create({ name: "fleet-wide" });
    id = created.body.id;
    const started = await h.api("POST", `/api/v1/deployments/${id}/start`, { key: acme.key });
    expect(started.status, started.text).toBe(200);
    expect(started.body).toMatchObject({ status: "running", rolloutState: "in_progress", progress: { total: 5, pending: 4, skipped: 1 } });
    const skipped = await h.services.prisma.deploymentDevice.findFirstOrThrow({ where: { deploymentId: id, deviceId: x86[0].deviceId } });
    expect(skipped.reason).toContain("x86_64");

    const desired = await agentHeartbeat(h, arm[0]);
    const entry = desired.find((d) => d.deploymentId === id)!;
    expect(entry).toMatchObject({
      action: "install", applicationId: appId, version: "1.0.0",
      profile: { id: "compose-main", type: "compose", components: [{ name: "gateway" }] },
      parameters: { gateway: { POLL_SECONDS: 60, MODE: "fast", API_TOKEN: SECRET } },
    });
    expect(await agentHeartbeat(h, x86[0])).toEqual([]);

    const again = await h.api("POST", `/api/v1/deployments/${id}/start`, { key: acme.key });
    expect(again.status).toBe(409);
    expect(again.text).toContain("running");
  });

  it("refuses a target change while running, naming the field (a version change is an update rollout: upgrade.test.ts)", async () => {
    const res = await h.api("PATCH", `/api/v1/deployments/${id}`, { key: acme.key, body: { target: { labelSelector: { site: "elsewhere" } } } });
    expect(res.status).toBe(409);
    expect(res.body.message).toMatch(/^target: cannot change while the deployment is running/);
  });

  it("records agent progress, ignores reports for deployments a device was not given, and keeps the version history", async () => {
    await agentHeartbeat(h, arm[0], [{ deploymentId: id, state: "downloading" }]);
    await agentHeartbeat(h, arm[1], [{ deploymentId: id, state: "installing" }]);
    await agentHeartbeat(h, arm[2], [{ deploymentId: id, state: "running" }]);
    await agentHeartbeat(h, arm[3], [{ deploymentId: id, state: "failed", message: "image pull failed" }]);
    // never given: ignored
    await agentHeartbeat(h, x86[0], [{ deploymentId: id, state: "running" }]);
    const got = await h.api("GET", `/api/v1/deployments/${id}`, { key: acme.key });
    expect(got.body.progress).toMatchObject({ total: 5, downloading: 1, installing: 1, running: 1, failed: 1, skipped: 1, pending: 0 });
    const history = await h.services.prisma.deviceVersionHistory.findMany({ where: { deploymentId: id }, orderBy: { succeeded: "desc" } });
    expect(history.map((e) => [e.deviceId, e.version, e.outcome, e.succeeded])).toEqual([
      [arm[2].deviceId, "1.0.0", "running", true],
      [arm[3].deviceId, "1.0.0", "failed", false],
    ]);
    expect(history[1].message).toBe("image pull failed");
  });

  it("lists the deployment's devices with their state, the agent's message and the skip reason", async () => {
    const failed = await h.api("GET", `/api/v1/deployments/${id}/devices?state=failed`, { key: acme.key });
    expect(failed.status, failed.text).toBe(200);
    expect(failed.body).toMatchObject({ total: 1, hasMore: false });
    expect(failed.body.items[0]).toMatchObject({ deviceId: arm[3].deviceId, state: "failed", desiredAction: "install", message: "image pull failed", batchIndex: null });
    const skipped = await h.api("GET", `/api/v1/deployments/${id}/devices?state=skipped`, { key: acme.key });
    expect(skipped.body.items[0]).toMatchObject({ deviceId: x86[0].deviceId, desiredAction: null });
    expect(skipped.body.items[0].reason).toContain("architecture x86_64");
    const page = await h.api("GET", `/api/v1/deployments/${id}/devices?limit=2`, { key: acme.key });
    expect(page.body).toMatchObject({ total: 5, hasMore: true });
    expect((await h.api("GET", `/api/v1/deployments/${id}/devices`, { key: globex.key })).status).toBe(404);
  });

  it("fires the deployment_failed alert for the failed device", async () => {
    const rule = await h.api("POST", "/api/v1/alert-rules", { key: acme.key, body: { name: "deploy failures", condition: { type: "deployment_failed" } } });
    expect(rule.status, rule.text).toBe(201);
    await evaluateRulesOnce(h.services, { organizationId: acme.org.id });
    const firing = await h.services.prisma.alertState.findMany({ where: { ruleId: rule.body.id, state: "firing" } });
    expect(firing.map((f) => [f.subjectId, f.value])).toEqual([[arm[3].deviceId, 1]]);
    await h.api("DELETE", `/api/v1/alert-rules/${rule.body.id}`, { key: acme.key });
  });

  it("completes once no device is in flight, and counts in the statistics", async () => {
    await agentHeartbeat(h, arm[0], [{ deploymentId: id, state: "running" }]);
    await agentHeartbeat(h, arm[1], [{ deploymentId: id, state: "running" }]);
    const got = await h.api("GET", `/api/v1/deployments/${id}`, { key: acme.key });
    expect(got.body).toMatchObject({ status: "running", rolloutState: "completed", rolloutReason: "every device reported running or failed (no attempt left)", progress: { running: 3, failed: 1 } });
    const stats = await h.api("GET", "/api/v1/deployments/stats", { key: acme.key });
    expect(stats.status).toBe(200);
    expect(stats.body.byStatus.running).toBeGreaterThanOrEqual(1);
    expect(stats.body.devices.running).toBeGreaterThanOrEqual(3);
    const org = await h.api("GET", `/api/v1/organizations/${acme.org.id}`, { key: acme.key });
    if (org.status === 200 && org.body.stats) expect(org.body.stats.runningDeployments).toBeGreaterThanOrEqual(1);
  });

  it("stop asks devices to remove it; the deployment waits in awaiting-removal until all confirm", async () => {
    const stopped = await h.api("POST", `/api/v1/deployments/${id}/stop`, { key: acme.key, body: {} });
    expect(stopped.status, stopped.text).toBe(200);
    expect(stopped.body.status).toBe("stopping");
    const desired = await agentHeartbeat(h, arm[0]);
    expect(desired.find((d) => d.deploymentId === id)).toMatchObject({ action: "remove", parameters: {} });

    const waiting = await h.api("GET", "/api/v1/deployments/awaiting-removal", { key: acme.key });
    expect(waiting.body.items.find((d: { id: string }) => d.id === id)).toMatchObject({ status: "stopping", awaiting: 4, confirmed: 0, total: 4 });

    for (const device of arm.slice(0, 3)) await agentHeartbeat(h, device, [{ deploymentId: id, state: "removed" }]);
    const status = await h.api("GET", `/api/v1/deployments/${id}/removal-status`, { key: acme.key });
    expect(status.status).toBe(200);
    expect(status.body).toMatchObject({ status: "stopping", total: 4, confirmed: 3, awaiting: 1, complete: false });
    expect(status.body.devices[0]).toMatchObject({ deviceId: arm[3].deviceId, confirmed: false });
    expect(await agentHeartbeat(h, arm[0])).toEqual([]);

    const second = await h.api("POST", `/api/v1/deployments/${id}/stop`, { key: acme.key, body: {} });
    expect(second.status).toBe(409);
    await agentHeartbeat(h, arm[3], [{ deploymentId: id, state: "removed" }]);
    const done = await h.api("GET", `/api/v1/deployments/${id}`, { key: acme.key });
    expect(done.body.status).toBe("stopped");
    const after = await h.api("GET", "/api/v1/deployments/awaiting-removal", { key: acme.key });
    expect(after.body.items.some((d: { id: string }) => d.id === id)).toBe(false);
  });

  it("updates a stopped deployment (version change re-checks parameters) and starts it again", async () => {
    const updated = await h.api("PATCH", `/api/v1/deployments/${id}`, { key: acme.key, body: { version: "1.1.0" } });
    expect(updated.status, updated.text).toBe(200);
    expect(updated.body).toMatchObject({ version: "1.1.0", parameters: { apiToken: "********", pollSeconds: 60 } });
    const restarted = await h.api("POST", `/api/v1/deployments/${id}/start`, { key: acme.key });
    expect(restarted.status, restarted.text).toBe(200);
    const desired = await agentHeartbeat(h, arm[1]);
    expect(desired.find((d) => d.deploymentId === id)).toMatchObject({ version: "1.1.0", parameters: { gateway: { API_TOKEN: SECRET } } });
  });

  it("delete of a running deployment waits for removal; force finishes it; then it is gone", async () => {
    const res = await h.api("DELETE", `/api/v1/deployments/${id}`, { key: acme.key });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ id, deleted: false, status: "deleting" });
    expect((await h.api("GET", `/api/v1/deployments/${id}`, { key: acme.key })).body.status).toBe("deleting");
    const forced = await h.api("DELETE", `/api/v1/deployments/${id}?force=true`, { key: acme.key });
    expect(forced.body).toEqual({ id, deleted: true, status: null });
    expect((await h.api("GET", `/api/v1/deployments/${id}`, { key: acme.key })).status).toBe(404);
    expect(await h.services.prisma.deploymentDevice.count({ where: { deploymentId: id } })).toBe(0);
    // the version history outlives the deployment
    expect(await h.services.prisma.deviceVersionHistory.count({ where: { deploymentId: id } })).toBeGreaterThan(0);
    expect((await agentHeartbeat(h, arm[1])).some((d) => d.deploymentId === id)).toBe(false);
  });

  it("a draft is deleted at once", async () => {
    const created = await create();
    const res = await h.api("DELETE", `/api/v1/deployments/${created.body.id}`, { key: acme.key });
    expect(res.body).toEqual({ id: created.body.id, deleted: true, status: null });
    expect(await h.services.prisma.deployment.count({ where: { id: created.body.id } })).toBe(0);
  });

  it("refuses to start when no targeted device is eligible", async () => {
    const created = await create({ target: { deviceIds: [x86[0].deviceId] } });
    const res = await h.api("POST", `/api/v1/deployments/${created.body.id}/start`, { key: acme.key });
    expect(res.status).toBe(409);
    expect(res.text).toContain("no eligible device");
    expect((await h.api("GET", `/api/v1/deployments/${created.body.id}`, { key: acme.key })).body.status).toBe("draft");
  });

  it("refuses to delete an application package a deployment uses", async () => {
    const created = await create();
    const res = await h.api("DELETE", `/api/v1/applications/${appId}`, { key: acme.key });
    expect(res.status, res.text).toBe(409);
    const uses = await h.api("GET", `/api/v1/applications/${appId}/deployments`, { key: acme.key });
    if (uses.status === 200) expect(JSON.stringify(uses.body)).toContain(created.body.id);
  });
});

describe("list", () => {
  it("filters by status, application and name, newest first, with paging", async () => {
    const all = await h.api("GET", "/api/v1/deployments?limit=2", { key: acme.key });
    expect(all.status).toBe(200);
    expect(all.body.items).toHaveLength(2);
    expect(all.body.hasMore).toBe(true);
    expect(new Date(all.body.items[0].createdAt) >= new Date(all.body.items[1].createdAt)).toBe(true);
    const drafts = await h.api("GET", `/api/v1/deployments?status=draft&applicationId=${appId}`, { key: acme.key });
    expect(drafts.body.items.length).toBeGreaterThan(0);
    expect(drafts.body.items.every((d: { status: string }) => d.status === "draft")).toBe(true);
    const named = await h.api("GET", "/api/v1/deployments?search=FIRST", { key: acme.key });
    expect(named.body.items.map((d: { name: string }) => d.name)).toEqual(["first"]);
    // the search is literal text: LIKE's wildcards in it match only themselves
    for (const name of ["rollout 50% now", "rollout 500 now", "canary_a", "canaryXa"]) expect((await create({ name })).status).toBe(201);
    const percent = await h.api("GET", `/api/v1/deployments?search=${encodeURIComponent("50%")}`, { key: acme.key });
    expect(percent.body.items.map((d: { name: string }) => d.name)).toEqual(["rollout 50% now"]);
    const underscore = await h.api("GET", "/api/v1/deployments?search=CANARY_", { key: acme.key });
    expect(underscore.body.items.map((d: { name: string }) => d.name)).toEqual(["canary_a"]);
    const bad = await h.api("GET", "/api/v1/deployments?status=flying", { key: acme.key });
    expect(bad.status).toBe(400);
  });
});

describe("tenancy and permissions", () => {
  it("another tenant's deployment is a 404 on every operation", async () => {
    const created = await create();
    const id = created.body.id;
    for (const [method, path] of [
      ["GET", `/api/v1/deployments/${id}`], ["PATCH", `/api/v1/deployments/${id}`], ["DELETE", `/api/v1/deployments/${id}`],
      ["POST", `/api/v1/deployments/${id}/start`], ["POST", `/api/v1/deployments/${id}/stop`], ["GET", `/api/v1/deployments/${id}/removal-status`],
      ["GET", `/api/v1/deployments/${id}/rollout`], ["POST", `/api/v1/deployments/${id}/rollout/initialize`],
    ] as const) {
      const res = await h.api(method, path, { key: globex.key, body: method === "GET" || method === "DELETE" ? undefined : {} });
      expect(res.status, `${method} ${path}: ${res.text}`).toBe(404);
    }
    const list = await h.api("GET", "/api/v1/deployments", { key: globex.key });
    expect(list.body.items.some((d: { id: string }) => d.id === id)).toBe(false);
  });

  it("a read-only key reads but cannot create or move", async () => {
    const reader = await h.createKey(acme.org.id, ["deployments:read"]);
    expect((await h.api("GET", "/api/v1/deployments", { key: reader })).status).toBe(200);
    expect((await create({}, reader)).status).toBe(403);
    const created = await create();
    expect((await h.api("POST", `/api/v1/deployments/${created.body.id}/start`, { key: reader })).status).toBe(403);
  });

  it("every deployment operation answers 401 without credentials, 403 without its permission, 404 across tenants", async () => {
    const id = (await create()).body.id;
    const d = `/api/v1/deployments/${id}`;
    const foreign = (path: string) => path.replace(id, id);
    const cases = [
      { method: "GET", path: "/api/v1/deployments", permission: "deployments:read" },
      { method: "POST", path: "/api/v1/deployments", body: body(), permission: "deployments:write" },
      { method: "GET", path: "/api/v1/deployments/stats", permission: "deployments:read" },
      { method: "GET", path: "/api/v1/deployments/awaiting-removal", permission: "deployments:read" },
      { method: "GET", path: d, permission: "deployments:read", foreignPath: foreign(d) },
      { method: "PATCH", path: d, body: { description: "secured" }, permission: "deployments:write", foreignPath: foreign(d) },
      { method: "GET", path: `${d}/removal-status`, permission: "deployments:read", foreignPath: `${d}/removal-status` },
      { method: "POST", path: `${d}/stop`, body: {}, permission: "deployments:write", foreignPath: `${d}/stop` },
      { method: "POST", path: `${d}/rollout/pause`, body: {}, permission: "deployments:write", foreignPath: `${d}/rollout/pause` },
      { method: "GET", path: `${d}/rollout`, permission: "deployments:read", foreignPath: `${d}/rollout` },
    ];
    for (const c of cases) await expectSecured(h, acme, globex, c);
  });
});
