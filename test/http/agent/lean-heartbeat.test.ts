// The lean REST route of the heartbeat (src/modules/agent/heartbeat-route.ts) and the group commit of
// heartbeat writes (src/modules/agent/heartbeat.ts): the same contract as every other
// operation (errors, validation, authentication), revocation effective at the next heartbeat,
// status changes and lastSeenAt stored before the answer, many heartbeats in one statement.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { eventBusOf, type FleetEvents } from "../../../src/lib/events.js";
import { heartbeatWriterOf } from "../../../src/modules/agent/heartbeat.js";
import { desiredStateOf } from "../../../src/modules/agent/desired-state.js";
import { createEnrollmentToken, enroll, ensureCa, heartbeat, type EnrolledDevice } from "./fleet-support.js";

let h: Harness;
let tenant: Tenant;
let enrollmentToken: string;

beforeAll(async () => {
  // Default certificate re-check interval (5 s): the heartbeat must not depend on it.
  h = await createHarness();
  tenant = await h.createTenant("Lean Heartbeats");
  await ensureCa(h, tenant.key);
  enrollmentToken = (await createEnrollmentToken(h, tenant.key, { maxUses: 200 })).token;
});
afterAll(() => h?.close());

async function post(body: string | undefined, headers: Record<string, string>) {
  const res = await fetch(`${h.url}/api/v1/agent/heartbeat`, { method: "POST", body, headers });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, body: text ? JSON.parse(text) : undefined };
}

describe("the lean heartbeat route", () => {
  let device: EnrolledDevice;
  beforeAll(async () => {
    device = await enroll(h, enrollmentToken);
  });

  it("validates the body with the heartbeat schema and names every invalid field", async () => {
    const res = await heartbeat(h, device, { status: "bogus", facts: { "1bad": 1 }, deployments: [{ deploymentId: "nope", state: "running" }] });
    expect(res.status).toBe(400);
    expect(res.body.message).toMatch(/^Invalid input: (?=.*status: )(?=.*facts\.1bad: )(?=.*deployments\.0\.deploymentId: )/);
    expect(res.body.code).toBe("BAD_REQUEST");
    expect(res.body.data).toMatchObject({ code: "BAD_REQUEST", httpStatus: 400, requestId: expect.any(String) });
    const paths = res.body.issues.map((i: { path: string[] }) => i.path.join("."));
    expect(paths).toEqual(expect.arrayContaining(["status", "facts.1bad", "deployments.0.deploymentId"]));
    // Nothing was written.
    expect((await h.services.prisma.device.findUniqueOrThrow({ where: { id: device.deviceId } })).lastSeenAt).toBeNull();
  });

  it("keeps the REST facade's body rules: no body is {}, JSON only (415), size limit (413), parse errors (400)", async () => {
    const authorization = `Bearer ${await device.token()}`;
    const none = await post(undefined, { authorization });
    expect(none.status, none.text).toBe(200);
    expect(none.body).toEqual({ heartbeatIntervalSeconds: 30, deployments: [] });

    const text = await post("{}", { authorization, "content-type": "text/plain" });
    expect(text.status).toBe(415);
    expect(text.body).toMatchObject({ code: "UNSUPPORTED_MEDIA_TYPE", data: { code: "UNSUPPORTED_MEDIA_TYPE", httpStatus: 415 } });

    const broken = await post("{nope", { authorization, "content-type": "application/json" });
    expect(broken.status).toBe(400);
    expect(broken.body).toMatchObject({ code: "PARSE_ERROR", message: 'Malformed JSON at line 1, column 2 (offset 1): unexpected "n"' });

    const big = await post(JSON.stringify({ facts: { blob: "x".repeat(h.services.config.BODY_LIMIT_BYTES) } }), { authorization, "content-type": "application/json" });
    expect(big.status).toBe(413);
    expect(big.body.code).toBe("PAYLOAD_TOO_LARGE");
  });

  it("answers with the security headers and request id of every other operation", async () => {
    const res = await post("{}", { authorization: `Bearer ${await device.token()}`, "content-type": "application/json", "x-request-id": "trace-me-1" });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-request-id")).toBe("trace-me-1");
    expect(res.headers.get("content-type")).toMatch(/^application\/json/);
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    expect(res.headers.get("content-security-policy")).toBeTruthy();
  });

  // The usual heartbeat (JSON body with a length, device token) is answered by the app's front
  // door (src/http/front-door.ts); one without a body, or in another charset, by the ordinary
  // express path. Both must answer alike.
  it("answers alike through the front door and the ordinary path: headers, errors, refused strings", async () => {
    const authorization = `Bearer ${await device.token()}`;
    const front = await post("{}", { authorization, "content-type": "application/json" });
    const ordinary = await post(undefined, { authorization });
    expect([front.status, ordinary.status]).toEqual([200, 200]);
    expect(front.body).toEqual(ordinary.body);
    const headersOf = (res: { headers: Headers }) =>
      Object.fromEntries([...res.headers].filter(([name]) => !["date", "content-length", "x-request-id", "connection", "keep-alive"].includes(name)));
    expect(headersOf(front)).toEqual(headersOf(ordinary));
    expect(front.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);

    const invalid = JSON.stringify({ status: "bogus" });
    const frontError = await post(invalid, { authorization, "content-type": "application/json", "x-request-id": "same-id" });
    const ordinaryError = await post(invalid, { authorization, "content-type": "application/json; charset=iso-8859-1", "x-request-id": "same-id" });
    expect(frontError.status).toBe(400);
    expect(frontError.body).toEqual(ordinaryError.body);
    expect(headersOf(frontError)).toEqual(headersOf(ordinaryError));

    // A NUL character (escaped) is refused by the request boundary on both, naming the field.
    const nul = '{"status":"error","message":"disk \\u0000 full"}';
    const frontNul = await post(nul, { authorization, "content-type": "application/json", "x-request-id": "nul" });
    const ordinaryNul = await post(nul, { authorization, "content-type": "application/json; charset=iso-8859-1", "x-request-id": "nul" });
    expect(frontNul.status).toBe(400);
    expect(frontNul.body).toMatchObject({ code: "BAD_REQUEST", issues: [{ path: ["message"] }] });
    expect(frontNul.body).toEqual(ordinaryNul.body);
    // "\\u0000" is a backslash and "u0000": storable, so accepted.
    expect((await post('{"status":"online","message":"C:\\\\u0000"}', { authorization, "content-type": "application/json" })).status).toBe(200);

    // A byte order mark is dropped as body-parser drops it; "__proto__" is refused.
    expect((await post("\uFEFF{}", { authorization, "content-type": "application/json; charset=utf-8" })).status).toBe(200);
    const proto = await post('{"__proto__":{"x":1}}', { authorization, "content-type": "application/json" });
    expect(proto.status).toBe(400);
    expect(proto.body.code).toBe("PARSE_ERROR");
  });

  it("refuses missing, malformed and foreign credentials with 401 in the common error shape", async () => {
    const none = await post("{}", { "content-type": "application/json" });
    expect(none.status).toBe(401);
    expect(none.body).toMatchObject({ code: "UNAUTHORIZED", data: { code: "UNAUTHORIZED", httpStatus: 401, requestId: expect.any(String) } });
    expect((await post("{}", { "content-type": "application/json", authorization: "Bearer not-a-jwt" })).status).toBe(401);
    const apiKey = await h.api("POST", "/api/v1/agent/heartbeat", { key: tenant.key, body: {} });
    expect(apiKey.status).toBe(401);
    expect(apiKey.body.message).toMatch(/not an API key/);
    // Authentication comes before validation: an unauthenticated invalid body is a 401.
    expect((await post(JSON.stringify({ status: "bogus" }), { "content-type": "application/json" })).status).toBe(401);
  });

  it("stores the status change and lastSeenAt before it answers, publishes the event once, and answers the desired state", async () => {
    const d = await enroll(h, enrollmentToken);
    const events: FleetEvents["device.status_changed"][] = [];
    const off = eventBusOf(h.services).subscribe("device.status_changed", (e) => void events.push(e));
    try {
      const before = Date.now();
      const res = await heartbeat(h, d, { facts: { os: "Linux 6.9", rack: "r1" } });
      expect(res.status, res.text).toBe(200);
      expect(res.body).toEqual({
        heartbeatIntervalSeconds: 30,
        deployments: await desiredStateOf(h.services, { id: d.deviceId, organizationId: tenant.org.id }, undefined),
      });
      const row = await h.services.prisma.device.findUniqueOrThrow({ where: { id: d.deviceId } });
      expect(row).toMatchObject({ status: "online", os: "Linux 6.9", facts: { rack: "r1" } });
      expect(row.lastSeenAt!.getTime()).toBeGreaterThanOrEqual(before - 2000);
      expect(events).toEqual([{ organizationId: tenant.org.id, deviceId: d.deviceId, from: "provisioned", to: "online", at: expect.any(String) }]);
      const logged = await h.services.prisma.deviceEvent.findMany({ where: { deviceId: d.deviceId, type: "status_changed" } });
      expect(logged.map((e) => e.data)).toEqual([{ from: "provisioned", to: "online", reason: "heartbeat" }]);

      // online -> online: no event; online -> error: one more.
      expect((await heartbeat(h, d)).status).toBe(200);
      expect((await heartbeat(h, d, { status: "error" })).status).toBe(200);
      expect(events.map((e) => e.to)).toEqual(["online", "error"]);
      expect(await h.services.prisma.deviceEvent.count({ where: { deviceId: d.deviceId, type: "status_changed" } })).toBe(2);
    } finally {
      off();
    }
  });

  it("refuses a revoked certificate at the very next heartbeat, although the certificate is cached", async () => {
    const d = await enroll(h, enrollmentToken);
    const token = await d.token();
    expect((await heartbeat(h, d, {}, token)).status).toBe(200);
    const revoke = await h.api("POST", `/api/v1/devices/${d.deviceId}/certificates/${d.certificateId}/revoke`, { key: tenant.key, body: { reason: "Key compromise" } });
    expect(revoke.status, revoke.text).toBe(200);
    const res = await heartbeat(h, d, {}, token);
    expect(res.status).toBe(401);
    expect(res.body).toMatchObject({ code: "UNAUTHORIZED", data: { httpStatus: 401 } });
  });

  it("refuses the devices of a suspended organization at the very next heartbeat (403)", async () => {
    const other = await h.createTenant("Lean Suspended");
    await ensureCa(h, other.key);
    const t = await createEnrollmentToken(h, other.key);
    const d = await enroll(h, t.token);
    const token = await d.token();
    expect((await heartbeat(h, d, {}, token)).status).toBe(200);
    expect((await h.api("POST", `/api/v1/organizations/${other.org.id}/suspend`, { body: { reason: "test" } })).status).toBe(200);
    const res = await heartbeat(h, d, {}, token);
    expect(res.status).toBe(403);
    expect(res.body.code).toBe("FORBIDDEN");
  });
});

describe("group commit of heartbeat writes", () => {
  it("writes concurrent heartbeats of many devices in fewer statements, each answered after its row is stored", async () => {
    const devices: EnrolledDevice[] = [];
    for (let i = 0; i < 30; i += 10) devices.push(...(await Promise.all(Array.from({ length: 10 }, () => enroll(h, enrollmentToken)))));
    const tokens = await Promise.all(devices.map((d) => d.token()));
    const writer = heartbeatWriterOf(h.services);
    const before = { ...writer.stats };
    const events: string[] = [];
    const off = eventBusOf(h.services).subscribe("device.status_changed", (e) => void events.push(e.deviceId));
    try {
      // Every device twice at once: the second heartbeat of a device goes into a later statement.
      const all = [...devices, ...devices];
      const results = await Promise.all(all.map((d, i) => heartbeat(h, d, { facts: { n: i } }, tokens[i % devices.length])));
      expect(results.map((r) => r.status)).toEqual(all.map(() => 200));
    } finally {
      off();
    }
    const rows = writer.stats.rows - before.rows;
    const statements = writer.stats.statements - before.statements;
    expect(rows).toBe(60);
    expect(statements).toBeLessThan(rows);
    // One status change (provisioned -> online) per device, however its heartbeats were grouped.
    expect(events.sort()).toEqual(devices.map((d) => d.deviceId).sort());
    const stored = await h.services.prisma.device.findMany({ where: { id: { in: devices.map((d) => d.deviceId) } } });
    expect(stored.every((d) => d.status === "online" && d.lastSeenAt !== null)).toBe(true);
    expect(await h.services.prisma.deviceEvent.count({ where: { deviceId: { in: devices.map((d) => d.deviceId) }, type: "status_changed" } })).toBe(30);
  });

  it("answers a refused device in a batch with 401 and the others with 200", async () => {
    const [good, bad] = [await enroll(h, enrollmentToken), await enroll(h, enrollmentToken)];
    const [goodToken, badToken] = [await good.token(), await bad.token()];
    expect((await heartbeat(h, bad, {}, badToken)).status).toBe(200);
    expect((await h.api("POST", `/api/v1/devices/${bad.deviceId}/certificates/${bad.certificateId}/revoke`, { key: tenant.key, body: { reason: "Key compromise" } })).status).toBe(200);
    const [a, b] = await Promise.all([heartbeat(h, good, {}, goodToken), heartbeat(h, bad, {}, badToken)]);
    expect(a.status).toBe(200);
    expect(b.status).toBe(401);
  });

  it("fails only the heartbeat whose row the database refuses, not the others of its statement", async () => {
    const devices = await Promise.all(Array.from({ length: 4 }, () => enroll(h, enrollmentToken)));
    const tokens = await Promise.all(devices.map((d) => d.token()));
    // A row the database refuses (what HTTP can deliver is storable since the request
    // boundary refuses NUL characters, so a trigger plays the refusing database): the
    // statement carrying it fails.
    const raw = h.services.database.opened.raw;
    await raw.query(`CREATE FUNCTION test_refuse_poison() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF NEW."facts" ? 'poison' THEN RAISE EXCEPTION 'poisoned row'; END IF; RETURN NEW; END $$`);
    await raw.query(`CREATE TRIGGER test_refuse_poison BEFORE UPDATE ON "Device" FOR EACH ROW EXECUTE FUNCTION test_refuse_poison()`);
    try {
      const results = await Promise.all(devices.map((d, i) => heartbeat(h, d, { facts: i === 0 ? { poison: true } : { note: "fine" } }, tokens[i])));
      expect(results.map((r) => r.status)).toEqual([500, 200, 200, 200]);
      expect(results[0].body).toMatchObject({ code: "INTERNAL_SERVER_ERROR", message: "Internal server error" });
    } finally {
      await raw.query(`DROP TRIGGER test_refuse_poison ON "Device"`);
      await raw.query(`DROP FUNCTION test_refuse_poison()`);
    }
  });
});

// The front door keeps node's own request (no express prototypes) and computes the source
// address as express's `req.ip` does: X-Forwarded-For counts only through TRUST_PROXY_HOPS.
describe("the source address of a heartbeat through the front door", () => {
  async function sourceAddresses(proxyHops: string) {
    const own = await createHarness({ TRUST_PROXY_HOPS: proxyHops });
    try {
      const org = await own.createTenant("Source Addresses");
      await ensureCa(own, org.key);
      const device = await enroll(own, (await createEnrollmentToken(own, org.key, { maxUses: 2 })).token);
      const authorization = `Bearer ${await device.token()}`;
      const stored = async () => (await own.services.prisma.device.findUniqueOrThrow({ where: { id: device.deviceId } })).ipAddress;
      const send = (body: string | undefined, forwardedFor: string) =>
        fetch(`${own.url}/api/v1/agent/heartbeat`, { method: "POST", body, headers: { authorization, "x-forwarded-for": forwardedFor, ...(body ? { "content-type": "application/json" } : {}) } });
      expect((await send("{}", "203.0.113.7")).status).toBe(200); // the front door
      const front = await stored();
      expect((await send(undefined, "203.0.113.8")).status).toBe(200); // no body: the ordinary express path
      return { front, ordinary: await stored() };
    } finally {
      await own.close();
    }
  }

  it("takes X-Forwarded-For from a trusted proxy, as the ordinary path does", async () => {
    expect(await sourceAddresses("1")).toEqual({ front: "203.0.113.7", ordinary: "203.0.113.8" });
  });

  it("ignores X-Forwarded-For without trusted proxies and stores the peer's address, as the ordinary path does", async () => {
    const { front, ordinary } = await sourceAddresses("0");
    expect(front).toMatch(/^(::ffff:)?127\.0\.0\.1$|^::1$/);
    expect(front).toBe(ordinary);
  });
});
