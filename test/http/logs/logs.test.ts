// Device logs through HTTP: the agent's ingest, the filtered list and the sources, and the
// follow mode read by a real SSE client (replay, live lines, filters, resume, the client
// going away, tenant isolation); on PostgreSQL also across two server processes.
import crypto from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { expectSecured } from "../../support/security.js";
import { CHANNELS, pubSubOf } from "../../../src/modules/realtime/pubsub.js";
import { pruneOnce } from "../../../src/modules/telemetry/retention.js";
import { logWriterOf } from "../../../src/modules/logs/service.js";
import { createEnrollmentToken, enroll } from "../agent/fleet-support.js";
import { enrolledDevices, issuePaths, sendLogs, type EnrolledDevice } from "../telemetry/support.js";
import { onPostgres, startSecondProcess } from "../realtime/second-process.js";
import { openSse } from "./sse-client.js";

let h: Harness;
let acme: Tenant;
let globex: Tenant;
let device: EnrolledDevice;
let quiet: EnrolledDevice;

const T0 = Date.now() - 3600_000;
const at = (minutes: number) => new Date(T0 + minutes * 60_000).toISOString();

beforeAll(async () => {
  h = await createHarness();
  acme = await h.createTenant("Acme Logs");
  globex = await h.createTenant("Globex Logs");
  [device, quiet] = await enrolledDevices(h, acme, 2);
  const res = await sendLogs(h, device, [
    { timestamp: at(1), level: "info", source: "agent", message: "agent started" },
    { timestamp: at(2), level: "debug", source: "agent", message: "polling" },
    { timestamp: at(3), level: "warn", source: "kernel", message: "Disk 91% full" },
    { timestamp: at(4), level: "error", source: "app-web", message: "HTTP 500 on /health" },
    { timestamp: at(5), level: "error", source: "kernel", message: "I/O error, 50% retries" },
    { timestamp: at(6), message: "defaults: info from agent" },
  ]);
  expect(res.status, res.text).toBe(200);
});
afterAll(() => h?.close());

const logsOf = (query = "") => h.api("GET", `/api/v1/devices/${device.deviceId}/logs${query}`, { key: acme.key });

describe("ingest: POST /api/v1/agent/logs", () => {
  it("stores a batch in one go and answers the count", async () => {
    const res = await sendLogs(h, quiet, [{ timestamp: new Date().toISOString(), message: "hello" }]);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ accepted: 1 });
  });

  it("puts batches that arrive together, of several devices and organizations, into one statement", async () => {
    const devices = [...(await enrolledDevices(h, acme, 3)).map((d) => ({ id: d.deviceId, organizationId: acme.org.id })),
      ...(await enrolledDevices(h, globex, 1)).map((d) => ({ id: d.deviceId, organizationId: globex.org.id }))];
    const writer = logWriterOf(h.services);
    const before = { ...writer.stats };
    // handed over in one turn of the event loop, as the requests parsed together are
    const accepted = await Promise.all(devices.map((device, n) => writer.submit({ device, entries: [{ timestamp: at(20), level: "info", source: "app", message: `together ${n}` }] })));
    expect(accepted).toEqual([1, 1, 1, 1]);
    expect(writer.stats.statements - before.statements).toBe(1);
    const stored = await h.services.prisma.deviceLog.findMany({ where: { deviceId: { in: devices.map((d) => d.id) } }, select: { deviceId: true, message: true } });
    expect(stored.map((l) => [l.deviceId, l.message]).sort()).toEqual(devices.map((d, n) => [d.id, `together ${n}`]).sort());
  });

  it("stores concurrent batches of many devices and two organizations, each device's lines and sources its own", async () => {
    const mine = await enrolledDevices(h, acme, 4);
    const [theirs] = await enrolledDevices(h, globex, 1);
    const senders = [...mine, theirs];
    const writer = logWriterOf(h.services);
    const before = { ...writer.stats };
    const batchOf = (n: number, half: number) => Array.from({ length: 3 }, (_, i) => ({
      timestamp: at(10 + half * 3 + i), source: half === 0 ? "app" : "kernel", message: `device ${n} line ${half * 3 + i}`,
    }));
    // Two batches per device at once, with the same source names: the group commit may put them in one statement.
    const results = await Promise.all(senders.flatMap((d, n) => [sendLogs(h, d, batchOf(n, 0)), sendLogs(h, d, batchOf(n, 1))]));
    expect(results.map((r) => r.status)).toEqual(results.map(() => 200));
    expect(results.map((r) => r.body)).toEqual(results.map(() => ({ accepted: 3 })));
    expect(writer.stats.rows - before.rows).toBe(senders.length * 6);
    // how many statements depends on how the requests met (the test above groups deterministically): never more than requests
    expect(writer.stats.statements - before.statements).toBeLessThanOrEqual(senders.length * 2);

    for (const [n, d] of senders.entries()) {
      const tenant = d === theirs ? globex : acme;
      const lines = await h.api("GET", `/api/v1/devices/${d.deviceId}/logs`, { key: tenant.key });
      expect(lines.body.items.map((l: { message: string }) => l.message)).toEqual([5, 4, 3, 2, 1, 0].map((i) => `device ${n} line ${i}`));
      const sources = await h.services.prisma.deviceLogSource.findMany({ where: { deviceId: d.deviceId }, orderBy: { source: "asc" } });
      expect(sources.map((x) => [x.source, x.organizationId, x.lastLogAt.toISOString()])).toEqual([
        ["app", tenant.org.id, at(12)], ["kernel", tenant.org.id, at(15)],
      ]);
    }
    // another tenant's device stays a 404
    expect((await h.api("GET", `/api/v1/devices/${theirs.deviceId}/logs`, { key: acme.key })).status).toBe(404);
  });

  it("stores a numbered line sent again (its batch's answer lost) once; lines without a number as often as sent", async () => {
    const extra = await enroll(h, (await createEnrollmentToken(h, acme.key)).token, { name: "resending" });
    const t = new Date(Date.now() - 60_000).toISOString();
    // two lines of the same millisecond, told apart by their numbers
    const batch = [
      { timestamp: t, source: "app-web", message: "same line", seq: 1_700_000_000_000_001 },
      { timestamp: t, source: "app-web", message: "same line", seq: 1_700_000_000_000_002 },
    ];
    expect((await sendLogs(h, extra, batch)).status).toBe(200);
    const again = await sendLogs(h, extra, [...batch, { timestamp: t, source: "app-web", message: "a new one", seq: 1_700_000_000_000_003 }]);
    expect(again.status, again.text).toBe(200);
    const stored = await h.services.prisma.deviceLog.findMany({ where: { deviceId: extra.deviceId }, orderBy: { seq: "asc" }, select: { message: true, seq: true } });
    expect(stored).toEqual([
      { message: "same line", seq: 1_700_000_000_000_001n },
      { message: "same line", seq: 1_700_000_000_000_002n },
      { message: "a new one", seq: 1_700_000_000_000_003n },
    ]);
    // the list shows each line once
    const listed = await h.api("GET", `/api/v1/devices/${extra.deviceId}/logs`, { key: acme.key });
    expect(listed.status).toBe(200);
    expect(listed.body.total).toBe(3);
    // a sender without numbers: each send stored (no identity to tell a resend by)
    const plain = [{ timestamp: t, source: "legacy", message: "unnumbered" }];
    await sendLogs(h, extra, plain);
    await sendLogs(h, extra, plain);
    expect(await h.services.prisma.deviceLog.count({ where: { deviceId: extra.deviceId, source: "legacy" } })).toBe(2);
    // a number out of range is refused, naming it
    const bad = await sendLogs(h, extra, [{ timestamp: t, message: "x", seq: -1 }]);
    expect(bad.status).toBe(400);
    expect(issuePaths(bad.body)).toEqual(["entries.0.seq"]);
  });

  it("refuses the batch when one entry is invalid, naming its index", async () => {
    const ok = { timestamp: new Date().toISOString(), message: "fine" };
    const before = await h.services.prisma.deviceLog.count({ where: { deviceId: quiet.deviceId } });
    for (const [bad, field] of [
      [{ ...ok, level: "verbose" }, "level"],
      [{ ...ok, message: "" }, "message"],
      [{ ...ok, source: "nul \u0000 byte" }, "source"], // only the message is lossy (docs/telemetry.md)
      [{ ...ok, message: "x".repeat(8193) }, "message"],
      [{ ...ok, source: "a\nb" }, "source"],
      [{ ...ok, timestamp: new Date(Date.now() + 3600_000).toISOString() }, "timestamp"],
    ] as const) {
      const res = await sendLogs(h, quiet, [ok, ok, bad]);
      expect(res.status, JSON.stringify(bad).slice(0, 80)).toBe(400);
      expect(issuePaths(res.body)).toEqual([`entries.2.${field}`]);
    }
    expect(await h.services.prisma.deviceLog.count({ where: { deviceId: quiet.deviceId } })).toBe(before);
    expect((await h.api("POST", "/api/v1/agent/logs", { key: acme.key, body: { entries: [ok] } })).status).toBe(401);
  });
});

describe("list: GET /api/v1/devices/{id}/logs", () => {
  it("lists newest first with total and paging", async () => {
    const all = await logsOf();
    expect(all.status, all.text).toBe(200);
    expect(all.body.total).toBe(6);
    expect(all.body.items.map((l: { message: string }) => l.message)).toEqual([
      "defaults: info from agent", "I/O error, 50% retries", "HTTP 500 on /health", "Disk 91% full", "polling", "agent started",
    ]);
    expect(all.body.items[0]).toMatchObject({ level: "info", source: "agent", deviceId: device.deviceId, timestamp: at(6) });
    const page = await logsOf("?limit=2&offset=4");
    expect(page.body.items.map((l: { message: string }) => l.message)).toEqual(["polling", "agent started"]);
    expect(page.body.hasMore).toBe(false);
  });

  it("filters by source, level, text and time range", async () => {
    const messages = async (q: string) => (await logsOf(q)).body.items.map((l: { message: string }) => l.message);
    expect(await messages("?source=kernel")).toEqual(["I/O error, 50% retries", "Disk 91% full"]);
    expect(await messages("?level=error")).toEqual(["I/O error, 50% retries", "HTTP 500 on /health"]);
    expect(await messages("?level=error&level=warn&source=kernel")).toEqual(["I/O error, 50% retries", "Disk 91% full"]);
    expect(await messages("?q=ERROR")).toEqual(["I/O error, 50% retries"]);
    // LIKE wildcards in the search are literal characters
    expect(await messages(`?q=${encodeURIComponent("50%")}`)).toEqual(["I/O error, 50% retries"]);
    expect(await messages(`?q=${encodeURIComponent("_")}`)).toEqual([]);
    expect(await messages(`?from=${at(2)}&to=${at(4)}`)).toEqual(["HTTP 500 on /health", "Disk 91% full", "polling"]);
    expect((await logsOf("?level=loud")).status).toBe(400);
    expect((await logsOf(`?from=${at(4)}&to=${at(2)}`)).status).toBe(400);
  });

  it("lists the sources with when each last wrote", async () => {
    const res = await h.api("GET", `/api/v1/devices/${device.deviceId}/logs/sources`, { key: acme.key });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      items: [
        { source: "agent", lastLogAt: at(6) },
        { source: "app-web", lastLogAt: at(4) },
        { source: "kernel", lastLogAt: at(5) },
      ],
      total: 3,
    });
  });

  it("is secured: 401, 403 without telemetry:read, 404 across tenants and for unknown devices", async () => {
    for (const path of [`/api/v1/devices/${device.deviceId}/logs`, `/api/v1/devices/${device.deviceId}/logs/sources`]) {
      await expectSecured(h, acme, globex, { method: "GET", path, permission: "telemetry:read", foreignPath: path });
    }
    expect((await h.api("GET", `/api/v1/devices/${crypto.randomUUID()}/logs`, { key: acme.key })).status).toBe(404);
  });
});

describe("follow mode: GET /api/v1/devices/{id}/logs/stream (Server-Sent Events)", () => {
  const streamUrl = (query = "") => `${h.url}/api/v1/devices/${device.deviceId}/logs/stream${query}`;

  it("replays the last lines, then pushes new ones as the device sends them, until the client goes away", async () => {
    const subscribersBefore = pubSubOf(h.services).subscriberCount(CHANNELS.logs);
    const stream = await openSse(streamUrl("?tail=2"), { "x-api-key": acme.key });
    expect(stream.status).toBe(200);
    expect(stream.headers.get("content-type")).toMatch(/^text\/event-stream/);
    await stream.waitFor(1, "ready");
    const replay = stream.events.filter((e) => e.event === "log").map((e) => JSON.parse(e.data).message);
    expect(replay).toEqual(["I/O error, 50% retries", "defaults: info from agent"]); // oldest first

    expect((await sendLogs(h, device, [
      { timestamp: new Date().toISOString(), level: "info", message: "live one" },
      { timestamp: new Date().toISOString(), level: "error", source: "app-web", message: "live two" },
    ])).status).toBe(200);
    const events = await stream.waitFor(4);
    const live = events.slice(2).map((e) => JSON.parse(e.data));
    expect(live.map((l) => l.message)).toEqual(["live one", "live two"]);
    expect(live[1]).toMatchObject({ level: "error", source: "app-web", deviceId: device.deviceId });
    expect(events[3].id).toBe(live[1].id);
    // another device's lines never show up
    await sendLogs(h, quiet, [{ timestamp: new Date().toISOString(), message: "not for this stream" }]);
    expect(pubSubOf(h.services).subscriberCount(CHANNELS.logs)).toBe(subscribersBefore + 1);

    stream.close();
    await expect.poll(() => pubSubOf(h.services).subscriberCount(CHANNELS.logs), { timeout: 5000 }).toBe(subscribersBefore);
    expect(stream.events.filter((e) => e.event === "log").map((e) => JSON.parse(e.data).message)).not.toContain("not for this stream");
  });

  it("applies the filters to the replay and the live lines", async () => {
    const stream = await openSse(streamUrl("?level=error&source=app-web&tail=10"), { "x-api-key": acme.key });
    await stream.waitFor(1, "ready");
    expect(stream.events.filter((e) => e.event === "log").map((e) => JSON.parse(e.data).message)).toEqual(["HTTP 500 on /health", "live two"]);
    await sendLogs(h, device, [
      { timestamp: new Date().toISOString(), level: "info", source: "app-web", message: "ignored: info" },
      { timestamp: new Date().toISOString(), level: "error", source: "kernel", message: "ignored: kernel" },
      { timestamp: new Date().toISOString(), level: "error", source: "app-web", message: "shown" },
    ]);
    const events = await stream.waitFor(3);
    expect(JSON.parse(events[2].data).message).toBe("shown");
    stream.close();
  });

  it("resumes after Last-Event-ID instead of replaying the tail", async () => {
    const all = (await logsOf("?limit=3")).body.items;
    const stream = await openSse(streamUrl(), { "x-api-key": acme.key, "last-event-id": all[2].id });
    await stream.waitFor(1, "ready");
    expect(stream.events.filter((e) => e.event === "log").map((e) => JSON.parse(e.data).id)).toEqual([all[1].id, all[0].id]);
    stream.close();
  });

  it("resumes after `after` (a client reconnecting with a new EventSource), Last-Event-ID winning over it", async () => {
    const all = (await logsOf("?limit=3")).body.items;
    const stream = await openSse(streamUrl(`?after=${all[1].id}`), { "x-api-key": acme.key });
    await stream.waitFor(1, "ready");
    expect(stream.events.filter((e) => e.event === "log").map((e) => JSON.parse(e.data).id)).toEqual([all[0].id]);
    stream.close();
    const both = await openSse(streamUrl(`?after=${all[0].id}`), { "x-api-key": acme.key, "last-event-id": all[2].id });
    await both.waitFor(1, "ready");
    expect(both.events.filter((e) => e.event === "log").map((e) => JSON.parse(e.data).id)).toEqual([all[1].id, all[0].id]);
    both.close();
    const bad = await h.api("GET", `/api/v1/devices/${device.deviceId}/logs/stream?after=last`, { key: acme.key });
    expect(bad.status).toBe(400);
    expect(bad.body.message).toContain("after");
  });

  it("accepts the console's session cookie, as a same-origin EventSource sends it, and refuses it once signed out", async () => {
    const signIn = await h.api("POST", "/api/v1/auth/session", {
      key: null,
      headers: { origin: h.url },
      body: { email: acme.user.email, password: acme.user.password },
    });
    expect(signIn.status, signIn.text).toBe(200);
    const cookie = signIn.headers.get("set-cookie")!.split(";")[0];
    expect(cookie).toMatch(/^fm_session=fmc_/);

    const stream = await openSse(streamUrl("?tail=1"), { cookie });
    expect(stream.status).toBe(200);
    await stream.waitFor(1, "ready");
    await sendLogs(h, device, [{ timestamp: new Date().toISOString(), message: "seen through the cookie" }]);
    const lines = await stream.waitFor(2);
    expect(JSON.parse(lines[1].data).message).toBe("seen through the cookie");
    stream.close();

    const signOut = await h.api("POST", "/api/v1/auth/logout", { key: null, headers: { cookie, origin: h.url } });
    expect(signOut.status, signOut.text).toBe(200);
    const refused = await h.api("GET", `/api/v1/devices/${device.deviceId}/logs/stream`, { key: null, headers: { cookie } });
    expect(refused.status).toBe(401);
    expect(refused.body.data.httpStatus).toBe(401);
  });

  it("is secured like the other reads, with JSON errors", async () => {
    const path = `/api/v1/devices/${device.deviceId}/logs/stream`;
    await expectSecured(h, acme, globex, { method: "GET", path, permission: "telemetry:read", foreignPath: path });
    const bad = await h.api("GET", `/api/v1/devices/not-a-uuid/logs/stream`, { key: acme.key });
    expect(bad.status).toBe(400);
    expect(bad.body.code).toBe("BAD_REQUEST");
    const badTail = await h.api("GET", `${path}?tail=5000`, { key: acme.key });
    expect(badTail.status).toBe(400);
  });

  it.runIf(process.env.DATABASE_URL)("reaches a client of another server process (PostgreSQL LISTEN/NOTIFY)", async () => {
    expect(onPostgres(h)).toBe(true);
    const second = await startSecondProcess(h);
    try {
      const stream = await openSse(`${second.url}/api/v1/devices/${device.deviceId}/logs/stream?tail=0`, { "x-api-key": acme.key });
      await stream.waitFor(1, "ready");
      // sent through the first process
      expect((await sendLogs(h, device, [{ timestamp: new Date().toISOString(), message: "across processes" }])).status).toBe(200);
      const [line] = await stream.waitFor(1);
      expect(JSON.parse(line.data).message).toBe("across processes");
      stream.close();
    } finally {
      await second.close();
    }
  });
});

describe("retention", () => {
  it("prunes log lines older than LOG_RETENTION_DAYS, and their stale sources", async () => {
    const old = new Date(Date.now() - 20 * 86_400_000);
    expect((await sendLogs(h, quiet, [
      { timestamp: old.toISOString(), source: "ancient", message: "old 1" },
      { timestamp: new Date(old.getTime() + 1000).toISOString(), source: "ancient", message: "old 2" },
    ])).status).toBe(200);
    const result = await pruneOnce(h.services, { chunk: 1 });
    expect(result.logLines).toBe(2);
    const sources = await h.api("GET", `/api/v1/devices/${quiet.deviceId}/logs/sources`, { key: acme.key });
    expect(sources.body.items.map((s: { source: string }) => s.source)).toEqual(["agent"]);
  });
});
