// Admission (issue 50, docs/admission.md) over the real agent protocol: the token modes, the
// lobby (what a request shows, approval and rejection one by one and by selector), a device in
// the lobby given nothing (no desired state, no package, no pull grant, skipped by deployments)
// until approved, the pre-authorized list (a match admitted with its labels, a listed id with
// another key refused and shown as a conflict), tenant isolation and permissions.
import crypto from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { createCsr, generateDeviceKeys, signDeviceToken, x5tS256, type DeviceKeys } from "../../../agent/src/core/identity.js";
import { ensureCa, heartbeat, type EnrolledDevice } from "../agent/fleet-support.js";
import { importVersion } from "../deployments/support.js";

let h: Harness;
let acme: Tenant;
let globex: Tenant;
let appId: string;

beforeAll(async () => {
  h = await createHarness();
  acme = await h.createTenant("Acme Admission");
  globex = await h.createTenant("Globex Admission");
  await ensureCa(h, acme.key);
  await ensureCa(h, globex.key);
  appId = await importVersion(h, acme.org.id, { version: "1.0.0", parametersYaml: "  {}\n" });
}, 120_000);

afterAll(async () => {
  await h?.close();
});

async function token(mode?: string, labels: Record<string, string> = {}, key = acme.key) {
  const res = await h.api("POST", "/api/v1/enrollment-tokens", { key, body: { name: `t-${mode ?? "default"}`, labels, ...(mode ? { mode } : {}) } });
  expect(res.status, res.text).toBe(201);
  return res.body as { id: string; token: string; mode: string };
}

async function keyFingerprint(keys: DeviceKeys) {
  const spki = await crypto.webcrypto.subtle.exportKey("spki", keys.keys.publicKey);
  return crypto.createHash("sha256").update(Buffer.from(spki)).digest("hex");
}

interface Attempt {
  status: number;
  body: any;
  keys: DeviceKeys;
  reportedDeviceId: string;
  device?: EnrolledDevice;
}

async function enrollWith(secret: string, opts: { reportedDeviceId?: string; labels?: Record<string, string>; keys?: DeviceKeys; name?: string } = {}): Promise<Attempt> {
  const reportedDeviceId = opts.reportedDeviceId ?? `hw-${crypto.randomBytes(5).toString("hex")}`;
  const keys = opts.keys ?? (await generateDeviceKeys("ES256"));
  const res = await h.api("POST", "/api/v1/agent/enroll", {
    key: null,
    body: { enrollmentToken: secret, reportedDeviceId, csr: await createCsr(keys, reportedDeviceId), facts: { arch: "arm64", os: "linux", serial: "SN-1" }, ...(opts.labels ? { labels: opts.labels } : {}), ...(opts.name ? { name: opts.name } : {}) },
  });
  if (res.status !== 201) return { status: res.status, body: res.body, keys, reportedDeviceId };
  const x5t = x5tS256(res.body.certificate);
  const deviceId = res.body.deviceId as string;
  const device: EnrolledDevice = {
    deviceId, keys, certificate: res.body.certificate, certificateId: res.body.certificateId, x5t, reportedDeviceId,
    token: (t = {}) => signDeviceToken(keys, { deviceId, x5t, lifetimeSeconds: t.lifetimeSeconds }),
  };
  return { status: res.status, body: res.body, keys, reportedDeviceId, device };
}

const requests = async (query = "", key = acme.key) => {
  const res = await h.api("GET", `/api/v1/enrollment-requests${query}`, { key });
  expect(res.status, res.text).toBe(200);
  return res.body.items as any[];
};
const deviceOf = async (id: string, key = acme.key) => h.api("GET", `/api/v1/devices/${id}`, { key });

describe("token modes", () => {
  it("a token admits at once by default (today's behaviour) and says so; an unknown mode is a 400 naming mode", async () => {
    const t = await token();
    expect(t.mode).toBe("auto");
    const a = await enrollWith(t.token, { labels: { site: "x" } });
    expect(a.status).toBe(201);
    expect(a.body.admission).toBe("admitted");
    expect((await deviceOf(a.device!.deviceId)).body).toMatchObject({ admission: "admitted", labels: { site: "x" } });
    expect((await requests()).some((r) => r.deviceId === a.device!.deviceId)).toBe(false);

    const bad = await h.api("POST", "/api/v1/enrollment-tokens", { key: acme.key, body: { name: "bad", mode: "sometimes" } });
    expect(bad.status).toBe(400);
    expect(bad.body.message).toContain("mode");
    const listed = await h.api("GET", "/api/v1/enrollment-tokens", { key: acme.key });
    expect(listed.body.items.find((x: { id: string }) => x.id === t.id).mode).toBe("auto");
  });
});

describe("the lobby", () => {
  let lobbyToken: { id: string; token: string };
  let a1: Attempt, a2: Attempt, b1: Attempt;

  beforeAll(async () => {
    lobbyToken = await token("approval", { fleet: "acme" });
    a1 = await enrollWith(lobbyToken.token, { labels: { site: "a" }, name: "cam-a1" });
    a2 = await enrollWith(lobbyToken.token, { labels: { site: "a" } });
    b1 = await enrollWith(lobbyToken.token, { labels: { site: "b" } });
  });

  it("puts each new device in the lobby with what it said, what the service saw and its key's fingerprint", async () => {
    for (const a of [a1, a2, b1]) expect([a.status, a.body.admission]).toEqual([201, "pending"]);
    const device = (await deviceOf(a1.device!.deviceId)).body;
    // visible, but carrying no labels until approved (no selector matches it meanwhile)
    expect(device).toMatchObject({ admission: "pending", labels: {}, status: "provisioned", name: "cam-a1" });
    const pending = await requests("?state=pending");
    const r = pending.find((x) => x.deviceId === a1.device!.deviceId);
    expect(r).toMatchObject({
      state: "pending", reportedDeviceId: a1.reportedDeviceId, name: "cam-a1", facts: { arch: "arm64", os: "linux", serial: "SN-1" },
      requestedLabels: { site: "a", fleet: "acme" }, enrollmentTokenId: lobbyToken.id, tokenName: "t-approval",
      keyFingerprint: await keyFingerprint(a1.keys), reason: null, decidedBy: null, decidedAt: null,
    });
    expect(r.sourceAddress).toMatch(/127\.0\.0\.1|::1/);
    expect(Date.parse(r.createdAt)).toBeGreaterThan(Date.now() - 120_000);
    expect((await requests("?labels=site=b")).map((x) => x.deviceId)).toEqual([b1.device!.deviceId]);
    expect((await h.api("GET", `/api/v1/enrollment-requests/${r.id}`, { key: acme.key })).body.id).toBe(r.id);
  });

  it("a device in the lobby heartbeats and is visible, but gets no deployment, package or pull grant", async () => {
    const pending = a1.device!;
    const hb = await heartbeat(h, pending, { facts: { arch: "arm64" } });
    expect(hb.status, hb.text).toBe(200);
    expect(hb.body.deployments).toEqual([]);
    expect((await deviceOf(pending.deviceId)).body.status).toBe("online");

    // A deployment naming it by id skips it with the reason; an admitted device is given it.
    const admitted = (await enrollWith((await token()).token)).device!;
    const created = await h.api("POST", "/api/v1/deployments", {
      key: acme.key,
      body: { name: "to-both", applicationId: appId, version: "1.0.0", profileId: "compose-main", target: { deviceIds: [pending.deviceId, admitted.deviceId] } },
    });
    expect(created.status, created.text).toBe(201);
    expect((await h.api("POST", `/api/v1/deployments/${created.body.id}/start`, { key: acme.key })).status).toBe(200);
    const entries = (await h.api("GET", `/api/v1/deployments/${created.body.id}/devices?limit=50`, { key: acme.key })).body.items as any[];
    expect(entries.find((e) => e.deviceId === pending.deviceId)).toMatchObject({ state: "skipped", reason: "the device awaits approval in the enrollment lobby" });
    expect((await heartbeat(h, admitted)).body.deployments.map((d: { deploymentId: string }) => d.deploymentId)).toEqual([created.body.id]);
    expect((await heartbeat(h, pending)).body.deployments).toEqual([]);

    // Even a desired install written for it (no operation does that) hands it nothing: the
    // heartbeat answers nothing and the package with its pull grant is a 404.
    await h.services.prisma.deploymentDevice.updateMany({ where: { deploymentId: created.body.id, deviceId: pending.deviceId }, data: { state: "pending", desiredAction: "install", reason: null } });
    expect((await heartbeat(h, pending)).body.deployments).toEqual([]);
    const pkg = await h.api("GET", `/api/v1/agent/deployments/${created.body.id}/components/gateway`, { key: null, token: await pending.token() });
    expect(pkg.status, pkg.text).toBe(404);
    expect(pkg.body.pullGrant).toBeUndefined();
    await h.services.prisma.deploymentDevice.deleteMany({ where: { deploymentId: created.body.id, deviceId: pending.deviceId } });
  });

  it("approves every request matching a selector, with labels; the devices then get what their labels match", async () => {
    // a continuous deployment for site=a (one admitted device matches it) exists before the approval
    await enrollWith((await token()).token, { labels: { site: "a" } });
    const created = await h.api("POST", "/api/v1/deployments", {
      key: acme.key,
      body: { name: "site-a", applicationId: appId, version: "1.0.0", profileId: "compose-main", continuous: true, target: { labelSelector: { site: "a" } } },
    });
    expect(created.status, created.text).toBe(201);
    const started = await h.api("POST", `/api/v1/deployments/${created.body.id}/start`, { key: acme.key });
    expect(started.status, started.text).toBe(200);
    expect((await heartbeat(h, a2.device!)).body.deployments).toEqual([]);

    const res = await h.api("POST", "/api/v1/enrollment-requests/approve", { key: acme.key, body: { labelSelector: { site: "a" }, labels: { zone: "z1" } } });
    expect(res.status, res.text).toBe(200);
    expect(res.body.decided).toBe(2);
    expect(res.body.requests.map((r: { deviceId: string }) => r.deviceId).sort()).toEqual([a1.device!.deviceId, a2.device!.deviceId].sort());
    for (const a of [a1, a2]) {
      expect((await deviceOf(a.device!.deviceId)).body).toMatchObject({ admission: "admitted", labels: { site: "a", fleet: "acme", zone: "z1" } });
    }
    const approved = (await requests("?state=approved")).find((r) => r.deviceId === a2.device!.deviceId);
    expect(approved).toMatchObject({ state: "approved", approvalLabels: { zone: "z1" }, decidedBy: { type: "api_key" } });
    expect((await deviceOf(b1.device!.deviceId)).body.admission).toBe("pending");
    // the approved device gets the continuous deployment at its next heartbeat
    const desired = (await heartbeat(h, a2.device!)).body.deployments as Array<{ deploymentId: string; action: string }>;
    expect(desired).toEqual([expect.objectContaining({ deploymentId: created.body.id, action: "install" })]);
    const activity = (await h.api("GET", `/api/v1/devices/${a2.device!.deviceId}/activity?type=approved`, { key: acme.key })).body.items;
    expect(activity[0].message).toContain("Approved in the enrollment lobby");
    const audit = await h.api("GET", "/api/v1/audit?action=enrollment-requests.approve", { key: acme.key });
    expect(audit.body.items[0]).toMatchObject({ action: "enrollment-requests.approve", outcome: "success" });
    expect(JSON.stringify(audit.body.items[0].changes)).toContain(a2.device!.deviceId);
    // an empty selector would approve every request: refused
    const empty = await h.api("POST", "/api/v1/enrollment-requests/approve", { key: acme.key, body: { labelSelector: {} } });
    expect(empty.status).toBe(400);
    expect(empty.body.message).toContain("labelSelector");
  });

  it("rejects one request: certificate revoked, device removed, request kept with the reason; a second decision is a 409", async () => {
    const [r] = (await requests("?state=pending")).filter((x) => x.deviceId === b1.device!.deviceId);
    const res = await h.api("POST", `/api/v1/enrollment-requests/${r.id}/reject`, { key: acme.key, body: { reason: "not ours" } });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ decided: 1, requests: [{ id: r.id, deviceId: b1.device!.deviceId }] });
    expect((await deviceOf(b1.device!.deviceId)).status).toBe(404);
    expect((await heartbeat(h, b1.device!)).status).toBe(401);
    expect((await h.api("GET", `/api/v1/enrollment-requests/${r.id}`, { key: acme.key })).body).toMatchObject({ state: "rejected", reason: "not ours" });
    const cert = await h.services.prisma.deviceCertificate.findFirstOrThrow({ where: { deviceId: b1.device!.deviceId } });
    expect(cert.revoked).toBe(true);
    const again = await h.api("POST", `/api/v1/enrollment-requests/${r.id}/approve`, { key: acme.key, body: {} });
    expect(again.status).toBe(409);
    expect(again.body.message).toContain("already decided: rejected");
    const audit = await h.api("GET", "/api/v1/audit?action=enrollment-requests.reject", { key: acme.key });
    expect(audit.body.items[0]).toMatchObject({ outcome: "success", entityId: r.id });
  });

  it("rejects by selector", async () => {
    const c1 = await enrollWith(lobbyToken.token, { labels: { site: "c" } });
    const c2 = await enrollWith(lobbyToken.token, { labels: { site: "c" } });
    const res = await h.api("POST", "/api/v1/enrollment-requests/reject", { key: acme.key, body: { labelSelector: { site: "c" } } });
    expect(res.status, res.text).toBe(200);
    expect(res.body.decided).toBe(2);
    for (const c of [c1, c2]) expect((await deviceOf(c.device!.deviceId)).status).toBe(404);
  });

  it("another tenant's request is a 404; without enrollment:write a decision is a 403 and changes nothing", async () => {
    const d = await enrollWith(lobbyToken.token, { labels: { site: "d" } });
    const [r] = (await requests("?labels=site=d"));
    expect((await h.api("GET", `/api/v1/enrollment-requests/${r.id}`, { key: globex.key })).status).toBe(404);
    expect((await h.api("POST", `/api/v1/enrollment-requests/${r.id}/approve`, { key: globex.key, body: {} })).status).toBe(404);
    expect((await requests("", globex.key)).length).toBe(0);
    const globexSelector = await h.api("POST", "/api/v1/enrollment-requests/approve", { key: globex.key, body: { labelSelector: { site: "d" } } });
    expect(globexSelector.body.decided).toBe(0);

    const reader = await h.createKey(acme.org.id, ["devices:read"]);
    expect((await h.api("GET", "/api/v1/enrollment-requests", { key: reader })).status).toBe(200);
    expect((await h.api("POST", `/api/v1/enrollment-requests/${r.id}/approve`, { key: reader, body: {} })).status).toBe(403);
    expect((await h.api("POST", "/api/v1/preauthorized-devices/import", { key: reader, body: { devices: [{ deviceId: "x" }] } })).status).toBe(403);
    expect((await deviceOf(d.device!.deviceId)).body.admission).toBe("pending");
  });
});

describe("pre-authorized devices", () => {
  let keysA: DeviceKeys;
  const idA = `factory-${crypto.randomBytes(4).toString("hex")}`;
  const idB = `factory-${crypto.randomBytes(4).toString("hex")}`;

  beforeAll(async () => {
    keysA = await generateDeviceKeys("ES256");
  });

  it("imports the factory's CSV: a listed id with its key is admitted with the list's labels", async () => {
    const fp = await keyFingerprint(keysA);
    const csv = `deviceId,keyFingerprint,ekHash,labels\n${idA},${fp.match(/../g)!.join(":").toUpperCase()},,"line=3,site=plant"\n${idB},,${"ab".repeat(32)},line=4\n`;
    const res = await h.api("POST", "/api/v1/preauthorized-devices/import", { key: acme.key, body: { csv } });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ created: 2, updated: 0 });
    const listed = (await h.api("GET", `/api/v1/preauthorized-devices?search=${idA}`, { key: acme.key })).body.items;
    expect(listed).toEqual([expect.objectContaining({ deviceId: idA, keyFingerprint: fp, labels: { line: "3", site: "plant" }, enrolledDeviceId: null })]);

    const only = await token("preauthorized", { fleet: "acme" });
    const a = await enrollWith(only.token, { reportedDeviceId: idA, keys: keysA, labels: { site: "asked" } });
    expect(a.status, JSON.stringify(a.body)).toBe(201);
    expect(a.body.admission).toBe("admitted");
    expect((await deviceOf(a.device!.deviceId)).body.labels).toEqual({ site: "plant", line: "3", fleet: "acme" });
    expect((await heartbeat(h, a.device!)).status).toBe(200);
    const r = (await requests("?state=approved")).find((x) => x.deviceId === a.device!.deviceId);
    expect(r).toMatchObject({ reason: "pre-authorized", decidedBy: { type: "system" } });
    expect((await h.api("GET", `/api/v1/preauthorized-devices?search=${idA}`, { key: acme.key })).body.items[0].enrolledDeviceId).toBe(a.device!.deviceId);
  });

  it("a listed id with another key is refused and shown as a conflict; an unlisted id is refused by a preauthorized token", async () => {
    const only = await token("preauthorized");
    await h.api("POST", "/api/v1/preauthorized-devices/import", { key: acme.key, body: { devices: [{ deviceId: `${idA}-2`, keyFingerprint: await keyFingerprint(keysA) }] } });
    const impostor = await enrollWith(only.token, { reportedDeviceId: `${idA}-2` });
    expect(impostor.status).toBe(409);
    expect(impostor.body.message).toContain("pre-authorized with another key");
    expect(await h.services.prisma.device.count({ where: { reportedDeviceId: `${idA}-2` } })).toBe(0);
    const conflicts = await requests("?state=conflict");
    expect(conflicts.find((c) => c.reportedDeviceId === `${idA}-2`)).toMatchObject({ deviceId: null, keyFingerprint: await keyFingerprint(impostor.keys), tokenName: "t-preauthorized" });
    // in every mode, even one that admits at once
    expect((await enrollWith((await token()).token, { reportedDeviceId: `${idA}-2` })).status).toBe(409);

    const stranger = await enrollWith(only.token);
    expect(stranger.status).toBe(403);
    expect(stranger.body.message).toContain("not on the organization's pre-authorized list");
    const audit = await h.api("GET", "/api/v1/audit?action=agent.enroll&outcome=denied", { key: acme.key });
    expect(audit.body.items.some((e: { message: string }) => e.message.includes(stranger.reportedDeviceId))).toBe(true);
  });

  it("in the lobby only a verified attribute approves by itself: a listed key does, a listed id alone does not", async () => {
    const lobby = await token("approval");
    const keys = await generateDeviceKeys("ES256");
    const withKey = `factory-${crypto.randomBytes(4).toString("hex")}`;
    const idOnly = `factory-${crypto.randomBytes(4).toString("hex")}`;
    await h.api("POST", "/api/v1/preauthorized-devices/import", {
      key: acme.key,
      body: { devices: [{ deviceId: withKey, keyFingerprint: await keyFingerprint(keys), labels: { k: "v" } }, { deviceId: idOnly }] },
    });
    const verified = await enrollWith(lobby.token, { reportedDeviceId: withKey, keys });
    expect([verified.status, verified.body.admission]).toEqual([201, "admitted"]);
    const claimed = await enrollWith(lobby.token, { reportedDeviceId: idOnly });
    expect([claimed.status, claimed.body.admission]).toEqual([201, "pending"]);
  });

  it("a bad entry is a 400 naming it, and nothing is imported", async () => {
    const before = await h.services.prisma.preauthorizedDevice.count({ where: { organizationId: acme.org.id } });
    const bad = await h.api("POST", "/api/v1/preauthorized-devices/import", { key: acme.key, body: { devices: [{ deviceId: "ok-1" }, { deviceId: "ok-2", keyFingerprint: "abc" }] } });
    expect(bad.status).toBe(400);
    expect(bad.body.message).toContain("devices.1.keyFingerprint");
    const csv = await h.api("POST", "/api/v1/preauthorized-devices/import", { key: acme.key, body: { csv: "deviceId,colour\nx,red\n" } });
    expect(csv.status).toBe(400);
    expect(csv.body.message).toContain('unknown column "colour"');
    const twice = await h.api("POST", "/api/v1/preauthorized-devices/import", { key: acme.key, body: { devices: [{ deviceId: "same" }, { deviceId: "same" }] } });
    expect(twice.status).toBe(400);
    expect(twice.body.message).toContain("listed twice");
    expect(await h.services.prisma.preauthorizedDevice.count({ where: { organizationId: acme.org.id } })).toBe(before);
    // another tenant's entry is a 404
    const [entry] = (await h.api("GET", "/api/v1/preauthorized-devices", { key: acme.key })).body.items;
    expect((await h.api("DELETE", `/api/v1/preauthorized-devices/${entry.id}`, { key: globex.key })).status).toBe(404);
  });
});
