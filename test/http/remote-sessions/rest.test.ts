// The user-side REST operations of remote access (docs/remote-access.md): status, body,
// stored effect; refusals (another tenant 404, no permission 403, off 409, offline 409,
// reason 400 naming the field, limits 409); the settings; and the device's long-poll
// answering at once with the offer.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness } from "../../support/harness.js";
import { openSession, remoteTenant, wait, type RemoteTenant } from "./support.js";
import { heartbeat } from "../agent/fleet-support.js";

let h: Harness;
let acme: RemoteTenant;

beforeAll(async () => {
  h = await createHarness();
  acme = await remoteTenant(h, { enabled: true, maxSessionsPerDevice: 2, maxSessionsPerUser: 3 });
});
afterAll(() => h?.close());

describe("open, get, list", () => {
  it("opens a pending session (201) with a one-use ticket, stored with who, device, kind and reason; audited", async () => {
    const res = await h.api("POST", "/api/v1/remote-sessions", {
      key: acme.key, body: { deviceId: acme.device.deviceId, kind: "exec", command: ["uname", "-a"], reason: "look at the kernel" },
    });
    expect(res.status, res.text).toBe(201);
    expect(res.body.session).toMatchObject({ deviceId: acme.device.deviceId, kind: "exec", state: "pending", command: ["uname", "-a"], tty: false, reason: "look at the kernel", userId: acme.user.id });
    expect(res.body.ticket).toMatch(/^rs_/);
    expect(res.body.streamUrl).toBe(`/api/v1/remote-sessions/${res.body.session.id}/stream?ticket=${res.body.ticket}`);
    const stored = await h.services.prisma.remoteSession.findUniqueOrThrow({ where: { id: res.body.session.id }, include: { connections: true } });
    expect(stored).toMatchObject({ organizationId: acme.org.id, state: "pending", kind: "exec", reason: "look at the kernel" });
    expect(stored.connections[0].ticketHash).not.toContain(res.body.ticket.slice(3, 20)); // stored hashed
    const audit = await h.services.prisma.auditEntry.findFirst({ where: { action: "remote-session.requested", entityId: res.body.session.id } });
    expect(audit).toMatchObject({ outcome: "success", organizationId: acme.org.id });

    const got = await h.api("GET", `/api/v1/remote-sessions/${res.body.session.id}`, { key: acme.key });
    expect(got.status).toBe(200);
    expect(got.body).toMatchObject({ id: res.body.session.id, state: "pending", bytesToDevice: 0, exitCode: null });
    const list = await h.api("GET", `/api/v1/remote-sessions?deviceId=${acme.device.deviceId}&kind=exec&state=pending&limit=10`, { key: acme.key });
    expect(list.status).toBe(200);
    expect(list.body.items.map((s: { id: string }) => s.id)).toContain(res.body.session.id);
    expect(list.body).toMatchObject({ hasMore: false });
    const none = await h.api("GET", "/api/v1/remote-sessions?kind=shell", { key: acme.key });
    expect(none.body.items.every((s: { kind: string }) => s.kind === "shell")).toBe(true);

    const closed = await h.api("POST", `/api/v1/remote-sessions/${res.body.session.id}/close`, { key: acme.key });
    expect(closed.status, closed.text).toBe(200);
    expect(closed.body).toMatchObject({ state: "ended", endReason: "closed-by-user" });
  });

  it("hands the offer to the device's long-poll at once, with a token for its leg", async () => {
    const opened = await openSession(h, acme.key, { deviceId: acme.device.deviceId, kind: "shell", cols: 100, rows: 30 });
    const answer = await wait(h, acme.device);
    expect(answer.enabled).toBe(true);
    const offer = answer.offers.find((o) => o.sessionId === opened.session.id);
    expect(offer).toMatchObject({ kind: "shell", connectionId: opened.connectionId, streamUrl: `/api/v1/agent/remote-sessions/${opened.session.id}/stream`, tty: true, cols: 100, rows: 30 });
    expect(offer!.token).toMatch(new RegExp(`^${opened.connectionId}\\.rd_`));
    await h.api("POST", `/api/v1/remote-sessions/${opened.session.id}/close`, { key: acme.key });
  });

  it("the heartbeat carries remoteAccess: enabled, the waiting offers; absent while off", async () => {
    const quiet = await heartbeat(h, acme.device, { status: "online" });
    expect(quiet.body.remoteAccess).toEqual({ enabled: true, pending: [] });
    const opened = await openSession(h, acme.key, { deviceId: acme.device.deviceId, kind: "exec", command: ["true"] });
    const res = await heartbeat(h, acme.device, { status: "online" });
    expect(res.status).toBe(200);
    expect(res.body.remoteAccess.enabled).toBe(true);
    expect(res.body.remoteAccess.pending.map((o: { sessionId: string }) => o.sessionId)).toContain(opened.session.id);
    await h.api("POST", `/api/v1/remote-sessions/${opened.session.id}/close`, { key: acme.key });
    const off = await remoteTenant(h, {});
    expect((await heartbeat(h, off.device, { status: "online" })).body.remoteAccess).toBeUndefined();
    const selected = await remoteTenant(h, { enabled: true, deviceSelector: "remote=yes" });
    expect((await heartbeat(h, selected.device, { status: "online" })).body.remoteAccess).toEqual({ enabled: false, pending: [] });
  });

  it("another tenant's device and session are 404", async () => {
    const other = await remoteTenant(h);
    const res = await h.api("POST", "/api/v1/remote-sessions", { key: other.key, body: { deviceId: acme.device.deviceId, kind: "shell" } });
    expect(res.status).toBe(404);
    const mine = await openSession(h, acme.key, { deviceId: acme.device.deviceId, kind: "shell" });
    expect((await h.api("GET", `/api/v1/remote-sessions/${mine.session.id}`, { key: other.key })).status).toBe(404);
    expect((await h.api("POST", `/api/v1/remote-sessions/${mine.session.id}/close`, { key: other.key })).status).toBe(404);
    expect((await h.api("GET", "/api/v1/remote-sessions", { key: other.key })).body.items).toEqual([]);
    await h.api("POST", `/api/v1/remote-sessions/${mine.session.id}/close`, { key: acme.key });
  });
});

describe("refusals", () => {
  it("a viewer, an operator and a * key get 403 and nothing is stored; the viewer may read", async () => {
    const before = await h.services.prisma.remoteSession.count();
    for (const [role, permissions] of [["viewer", ["*"]], ["operator", ["*"]], ["owner", ["*"]]] as const) {
      const key = await h.createKey(acme.org.id, [...permissions], { role });
      const res = await h.api("POST", "/api/v1/remote-sessions", { key, body: { deviceId: acme.device.deviceId, kind: "shell" } });
      expect(res.status, `${role}: ${res.text}`).toBe(403);
      expect(res.body.message).toContain("remote:shell");
    }
    expect(await h.services.prisma.remoteSession.count()).toBe(before);
    const viewer = await h.createKey(acme.org.id, ["*"], { role: "viewer" });
    expect((await h.api("GET", "/api/v1/remote-sessions", { key: viewer })).status).toBe(200);
    const remoteStar = await h.createKey(acme.org.id, ["remote:*"], { role: "owner" });
    expect((await h.api("POST", "/api/v1/remote-sessions", { key: remoteStar, body: { deviceId: acme.device.deviceId, kind: "exec", command: ["id"] } })).status).toBe(403);
  });

  it("an admin's own role names the kinds (owner and admin do, operator and viewer do not)", async () => {
    const roles = await h.api("GET", "/api/v1/system-roles", { key: acme.key });
    const byName = new Map((roles.body.items as { name: string; permissions: string[] }[]).map((r) => [r.name, r.permissions]));
    for (const p of ["remote:shell", "remote:exec", "remote:port-forward", "remote:files-read", "remote:files-write", "remote:manage"]) {
      expect(byName.get("owner")).toContain(p);
      expect(byName.get("admin")).toContain(p);
      expect(byName.get("operator")).not.toContain(p);
      expect(byName.get("viewer")).not.toContain(p);
    }
  });

  it("409 when remote access is off for the organization (the default)", async () => {
    const off = await remoteTenant(h, {});
    const res = await h.api("POST", "/api/v1/remote-sessions", { key: off.key, body: { deviceId: off.device.deviceId, kind: "shell" } });
    expect(res.status).toBe(409);
    expect(res.body.message).toMatch(/remote access is off/i);
    expect(await h.services.prisma.remoteSession.count({ where: { organizationId: off.org.id } })).toBe(0);
    const audit = await h.services.prisma.auditEntry.findFirst({ where: { organizationId: off.org.id, action: "remote-session.refused" } });
    expect(audit).toMatchObject({ outcome: "denied" });
    expect((await wait(h, off.device)).enabled).toBe(false);
  });

  it("409 at once for an offline device, naming when it was last seen", async () => {
    const t = await remoteTenant(h);
    await h.services.prisma.device.update({ where: { id: t.device.deviceId }, data: { status: "offline" } });
    const res = await h.api("POST", "/api/v1/remote-sessions", { key: t.key, body: { deviceId: t.device.deviceId, kind: "shell" } });
    expect(res.status).toBe(409);
    expect(res.body.message).toMatch(/offline \(last seen \d{4}-/);
  });

  it("409 for a device outside the organization's selector", async () => {
    const t = await remoteTenant(h, { enabled: true, deviceSelector: "remote=yes" });
    const res = await h.api("POST", "/api/v1/remote-sessions", { key: t.key, body: { deviceId: t.device.deviceId, kind: "shell" } });
    expect(res.status).toBe(409);
    expect(res.body.message).toContain("selector");
    await h.api("PATCH", `/api/v1/devices/${t.device.deviceId}`, { key: t.key, body: { labels: { remote: "yes" } } });
    expect((await h.api("POST", "/api/v1/remote-sessions", { key: t.key, body: { deviceId: t.device.deviceId, kind: "shell" } })).status).toBe(201);
  });

  it("400 naming the field: reason when required, exec's argv, port-forward's port, a relative path", async () => {
    const t = await remoteTenant(h, { enabled: true, requireReason: true });
    const cases: [Record<string, unknown>, string][] = [
      [{ kind: "shell" }, "reason"],
      [{ kind: "exec", command: [], reason: "x" }, "command"],
      [{ kind: "port-forward", target: { port: 70000 }, reason: "x" }, "target.port"],
      [{ kind: "file-read", path: "etc/passwd", reason: "x" }, "path"],
      [{ kind: "file-write", path: "/tmp/x", reason: "x" }, "size"],
    ];
    for (const [body, field] of cases) {
      const res = await h.api("POST", "/api/v1/remote-sessions", { key: t.key, body: { deviceId: t.device.deviceId, ...body } });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.message).toContain(`${field}:`);
    }
    expect(await h.services.prisma.remoteSession.count({ where: { organizationId: t.org.id } })).toBe(0);
  });

  it("409 past the per-device limit; a closed session frees its place", async () => {
    const t = await remoteTenant(h, { enabled: true, maxSessionsPerDevice: 2 });
    const a = await openSession(h, t.key, { deviceId: t.device.deviceId, kind: "shell" });
    await openSession(h, t.key, { deviceId: t.device.deviceId, kind: "shell" });
    const third = await h.api("POST", "/api/v1/remote-sessions", { key: t.key, body: { deviceId: t.device.deviceId, kind: "shell" } });
    expect(third.status).toBe(409);
    expect(third.body.message).toContain("maxSessionsPerDevice 2");
    await h.api("POST", `/api/v1/remote-sessions/${a.session.id}/close`, { key: t.key });
    expect((await h.api("POST", "/api/v1/remote-sessions", { key: t.key, body: { deviceId: t.device.deviceId, kind: "shell" } })).status).toBe(201);
  });

  it("closing another person's session needs remote:manage, and ends it force-closed", async () => {
    const opened = await openSession(h, acme.key, { deviceId: acme.device.deviceId, kind: "shell" });
    const admin = await h.services.prisma.role.findFirstOrThrow({ where: { organizationId: null, name: "admin" } });
    const adminKey = await h.createKey(acme.org.id, admin.permissions, { role: "admin" });
    const noManage = await h.createKey(acme.org.id, ["remote:shell", "remote:read"], { role: "admin" });
    expect((await h.api("POST", `/api/v1/remote-sessions/${opened.session.id}/close`, { key: noManage })).status).toBe(403);
    const res = await h.api("POST", `/api/v1/remote-sessions/${opened.session.id}/close`, { key: adminKey });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ state: "ended", endReason: "force-closed" });
    expect(await h.services.prisma.auditEntry.count({ where: { entityId: opened.session.id, action: "remote-session.ended" } })).toBe(1);
  });
});

describe("settings", () => {
  it("answers the defaults, changes what is sent, refuses a bad value naming it (nothing changed)", async () => {
    const t = await remoteTenant(h, {});
    const res = await h.api("GET", "/api/v1/remote-sessions/settings", { key: t.key });
    expect(res.body).toEqual({
      enabled: false, requireReason: false, deviceSelector: null, recordShell: false, recordingMaxBytes: 8388608, recordingRetentionDays: 90,
      idleTimeoutSeconds: 900, maxDurationSeconds: 14400, maxSessionsPerUser: 5, maxSessionsPerDevice: 5, joinTimeoutSeconds: 30,
    });
    const bad = await h.api("PUT", "/api/v1/remote-sessions/settings", { key: t.key, body: { enabled: true, deviceSelector: "no equals sign" } });
    expect(bad.status).toBe(400);
    expect(bad.body.message).toContain("deviceSelector");
    expect((await h.api("GET", "/api/v1/remote-sessions/settings", { key: t.key })).body.enabled).toBe(false);
    const ok = await h.api("PUT", "/api/v1/remote-sessions/settings", { key: t.key, body: { enabled: true, joinTimeoutSeconds: 10 } });
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body).toMatchObject({ enabled: true, joinTimeoutSeconds: 10, idleTimeoutSeconds: 900 });
    const org = await h.services.prisma.organization.findUniqueOrThrow({ where: { id: t.org.id } });
    expect((org.settings as any).remoteAccess).toMatchObject({ enabled: true, joinTimeoutSeconds: 10 });
    const viewer = await h.createKey(t.org.id, ["*"], { role: "viewer" });
    expect((await h.api("PUT", "/api/v1/remote-sessions/settings", { key: viewer, body: { enabled: false } })).status).toBe(403);
  });
});
