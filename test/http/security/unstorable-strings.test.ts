// Strings PostgreSQL cannot store (a NUL character, an unpaired UTF-16 surrogate) through each
// way into the service: the REST facade (body, query, path parameter), tRPC (POST body, GET
// batch), the lean agent route, a plain express route, the log stream and the WebSocket
// handshake. Each is refused with 400 naming the field, before authentication: nothing is
// stored, no audit entry is written, and the service logs no error. The one exception is the
// agent's log message, stored with U+FFFD in their place (docs/telemetry.md).
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createTRPCClient, httpBatchLink, TRPCClientError } from "@trpc/client";
import type { AppRouter } from "../../../src/index.js";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { connectRealtime } from "../../support/realtime-client.js";
import { enrolledDevices, sendLogs, type EnrolledDevice } from "../telemetry/support.js";

let h: Harness;
let acme: Tenant;
let device: EnrolledDevice;

beforeAll(async () => {
  h = await createHarness();
  acme = await h.createTenant("Acme Strings");
  [device] = await enrolledDevices(h, acme, 1);
});
afterAll(() => h?.close());

/** What a refused request must leave as it was: the rows it could have written, and the audit log. */
async function stored() {
  const p = h.services.prisma;
  const [organizations, audit, tokens, logs, deviceRow] = await Promise.all([
    p.organization.count(), p.auditEntry.count(), p.enrollmentToken.count(), p.deviceLog.count(),
    p.device.findUniqueOrThrow({ where: { id: device.deviceId }, select: { lastSeenAt: true, facts: true, status: true } }),
  ]);
  return { organizations, audit, tokens, logs, device: deviceRow };
}

const errorLines = () => h.logs.filter((line) => /"level":(50|60)/.test(line));
let before: Awaited<ReturnType<typeof stored>>;
let errorsBefore: number;
beforeEach(async () => {
  before = await stored();
  errorsBefore = errorLines().length;
});

/** The refusal every way in answers (REST shape), and nothing stored or logged as an error. */
async function expectRefused(res: { status: number; body: any; text: string }, path: string[], problem = /NUL character|unpaired UTF-16 surrogate/) {
  expect(res.status, res.text).toBe(400);
  expect(res.body).toMatchObject({ code: "BAD_REQUEST", message: expect.stringMatching(/^Invalid input: /), data: { code: "BAD_REQUEST", httpStatus: 400, requestId: expect.any(String) } });
  expect(res.body.message).toContain(`${path.join(".")}: `);
  expect(res.body.issues).toEqual([{ path, message: expect.stringMatching(problem), code: "custom" }]);
  expect(res.body.data.issues).toBeUndefined();
  await expectNothingStored();
}

async function expectNothingStored() {
  expect(await stored()).toEqual(before);
  expect(errorLines().slice(errorsBefore)).toEqual([]);
}

describe("REST facade", () => {
  it("refuses a NUL or an unpaired surrogate in a body field, before the handler and its audit entry", async () => {
    await expectRefused(await h.api("POST", "/api/v1/organizations", { body: { name: "ok name", description: "a\u0000b" } }), ["description"], /NUL character \(U\+0000\)/);
    await expectRefused(await h.api("POST", "/api/v1/organizations", { body: { name: "ok name", description: "\ud800x" } }), ["description"], /unpaired UTF-16 surrogate \(U\+D800\)/);
    await expectRefused(await h.api("POST", "/api/v1/organizations", { body: { name: "ok\udc00 name" } }), ["name"], /U\+DC00/);
    // A pair of surrogates is one character, and is stored as it came.
    const emoji = await h.api("POST", "/api/v1/organizations", { body: { name: "Rocket \ud83d\ude80 org" } });
    expect(emoji.status, emoji.text).toBe(201);
    expect((await h.services.prisma.organization.findUniqueOrThrow({ where: { id: emoji.body.id } })).name).toBe("Rocket 🚀 org");
  });

  it("refuses them in fields the operation ignores, and without credentials (before authentication)", async () => {
    await expectRefused(await h.api("POST", "/api/v1/auth/logout", { body: { name: "ok name", description: "\ud800x" } }), ["description"]);
    await expectRefused(await h.api("POST", "/api/v1/organizations", { key: null, body: { name: "ok name", description: "a\u0000b" } }), ["description"]);
  });

  it("names an object key that holds one, nested in arrays and records", async () => {
    await expectRefused(
      await h.api("POST", "/api/v1/enrollment-tokens", { key: acme.key, body: { name: "labels", labels: { site: "lab", "ro\u0000om": "1" } } }),
      ["labels", "ro\u0000om"],
      /^the key contains a NUL/,
    );
    await expectRefused(
      await h.api("POST", "/api/v1/groups/query", { key: acme.key, body: { labelSelector: { "\udc00": "x" } } }),
      ["labelSelector", "\udc00"],
    );
  });

  it("refuses a NUL in a query parameter, naming it (repeated parameters by position)", async () => {
    await expectRefused(await h.api("GET", "/api/v1/organizations?search=a%00b"), ["search"]);
    await expectRefused(await h.api("GET", `/api/v1/devices/${device.deviceId}/logs?level=info&level=warn%00`, { key: acme.key }), ["level", "1"]);
    await expectRefused(await h.api("GET", "/api/v1/organizations?a%00b=1"), ["a\u0000b"], /^the key contains/);
    // Invalid UTF-8 in a query string decodes to U+FFFD, as in every URL parser: storable, not refused.
    expect((await h.api("GET", "/api/v1/organizations?search=%ED%A0%80")).status).toBe(200);
  });

  it("refuses a path parameter holding a NUL or bytes that are not UTF-8, naming the parameter; a bad segment elsewhere names no route (404)", async () => {
    await expectRefused(await h.api("GET", "/api/v1/organizations/by-slug/a%00b"), ["slug"], /NUL character/);
    await expectRefused(await h.api("GET", "/api/v1/organizations/by-slug/%ED%A0%80"), ["slug"], /not valid percent-encoded UTF-8/);
    await expectRefused(await h.api("PUT", `/api/v1/organizations/${acme.org.id}/members/%00/role`, { body: { roleId: acme.org.id } }), ["userId"]);
    const nowhere = await h.api("GET", "/api/v1/organ%00izations");
    expect(nowhere.status).toBe(404);
    expect(nowhere.body).toMatchObject({ code: "NOT_FOUND", data: { httpStatus: 404, requestId: expect.any(String) } });
    await expectNothingStored();
  });
});

describe("tRPC", () => {
  const trpc = (key: string | null) =>
    createTRPCClient<AppRouter>({ links: [httpBatchLink({ url: `${h.url}/trpc`, headers: () => (key ? { "x-api-key": key } : {}) })] });

  it("refuses a POST body field in tRPC's envelope, and the typed client reads the issue", async () => {
    const res = await h.api("POST", "/trpc/organizations.create", { body: { name: "ok name", description: "a\u0000b" } });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: -32600, data: { code: "BAD_REQUEST", httpStatus: 400, requestId: expect.any(String), issues: [{ path: ["description"] }] } });
    expect(res.body.error.message).toMatch(/^Invalid input: description: contains a NUL character/);

    const err = await trpc(h.adminKey).organizations.create.mutate({ name: "ok name", description: "\ud800x" }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TRPCClientError);
    expect((err as TRPCClientError<AppRouter>).data).toMatchObject({ httpStatus: 400, issues: [{ path: ["description"] }] });
    await expectNothingStored();
  });

  it("refuses a GET batch whose JSON input holds one: the call holding it names its field, the other says why it did not run", async () => {
    const input = encodeURIComponent(JSON.stringify({ 0: {}, 1: { search: "x\ud800" } }));
    const res = await h.api("GET", `/trpc/organizations.list,organizations.list?batch=1&input=${input}`);
    expect(res.status).toBe(400);
    expect(res.body).toHaveLength(2);
    expect(res.body[1].error.data).toMatchObject({ code: "BAD_REQUEST", httpStatus: 400, requestId: expect.any(String), issues: [{ path: ["search"] }] });
    expect(res.body[0].error.data).toMatchObject({ code: "BAD_REQUEST", httpStatus: 400, requestId: expect.any(String) });
    expect(res.body[0].error.data.issues).toBeUndefined();
    expect(res.body[0].error.message).toBe("Not run: call 1 of this batch holds a string that cannot be stored");
    // The typed client's batch: both calls fail; the one holding the NUL names its own field.
    const client = trpc(h.adminKey);
    const results = await Promise.allSettled([client.organizations.list.query({}), client.organizations.list.query({ search: "a\u0000" })]);
    expect(results.map((r) => r.status)).toEqual(["rejected", "rejected"]);
    expect(((results[1] as PromiseRejectedResult).reason as TRPCClientError<AppRouter>).data?.issues).toEqual([
      { path: ["search"], message: expect.stringMatching(/NUL/), code: "custom" },
    ]);
    await expectNothingStored();
  });
});

describe("the lean agent route (heartbeat)", () => {
  it("refuses a fact holding one before the device token is checked: nothing written, no audit entry", async () => {
    const token = await device.token();
    await expectRefused(await h.api("POST", "/api/v1/agent/heartbeat", { key: null, token, body: { facts: { note: "\ud800x" } } }), ["facts", "note"]);
    await expectRefused(await h.api("POST", "/api/v1/agent/heartbeat", { key: null, body: { facts: { ["n\u0000"]: "x" } } }), ["facts", "n\u0000"]);
    // the same heartbeat with storable facts is taken
    expect((await h.api("POST", "/api/v1/agent/heartbeat", { key: null, token, body: { facts: { note: "fine" } } })).status).toBe(200);
  });
});

describe("plain express routes", () => {
  it("refuses a body field of the audit export before it is audited, and a query parameter of the log stream", async () => {
    await expectRefused(await h.api("POST", "/api/v1/audit/export", { key: acme.key, body: { action: "auth.\u0000*" } }), ["action"]);
    await expectRefused(await h.api("GET", `/api/v1/devices/${device.deviceId}/logs/stream?q=a%00b`, { key: acme.key }), ["q"]);
    await expectRefused(await h.api("GET", "/api/v1/ca-certificates/%00/download", { key: acme.key }), ["id"]);
  });

  it("refuses the WebSocket handshake's ticket holding a NUL before the ticket is looked up", async () => {
    const refused = await connectRealtime(h.url, "ticket\u0000");
    expect(refused).toEqual({ refused: 400 });
    await expectNothingStored();
  });
});

describe("the agent's log lines: the one lossy text field", () => {
  it("stores NUL characters and unpaired surrogates of a message as U+FFFD, and refuses them in any other field of the batch", async () => {
    const timestamp = new Date().toISOString();
    const res = await sendLogs(h, device, [
      { timestamp, source: "app-bin", message: "binary \u0000 output \ud800 and \udc00 end" },
      { timestamp, source: "app-bin", message: "emoji 🚀 stays" },
    ]);
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ accepted: 2 });
    const lines = await h.api("GET", `/api/v1/devices/${device.deviceId}/logs?source=app-bin`, { key: acme.key });
    expect(lines.body.items.map((l: { message: string }) => l.message).sort()).toEqual(["binary \ufffd output \ufffd and \ufffd end", "emoji 🚀 stays"]);
    expect(errorLines().slice(errorsBefore)).toEqual([]);

    before = await stored();
    await expectRefused(await sendLogs(h, device, [{ timestamp, source: "app\u0000", message: "x" }]), ["entries", "0", "source"]);
  });

  it("does the same on tRPC, for the call of a batch that is the log ingest", async () => {
    const token = await device.token();
    const timestamp = new Date().toISOString();
    const res = await h.api("POST", "/trpc/logsIngest.ingest?batch=1", {
      key: null, token, body: { 0: { entries: [{ timestamp, source: "trpc-bin", message: "nul \u0000 here" }] } },
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body[0].result.data).toEqual({ accepted: 1 });
    const line = await h.services.prisma.deviceLog.findFirstOrThrow({ where: { deviceId: device.deviceId, source: "trpc-bin" } });
    expect(line.message).toBe("nul \ufffd here");
  });
});
