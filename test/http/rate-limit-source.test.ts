// The per-source budget (RATE_LIMIT_PER_SOURCE): spent by requests that present no credential
// and by credentials that are refused, not by valid credentials, so a fleet behind one NAT
// address is not throttled as one caller. Once spent, the address is refused before any work.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness } from "../support/harness.js";
import { createEnrollmentToken, enroll, ensureCa, heartbeat } from "./agent/fleet-support.js";

const ORG = "/api/v1/organizations/by-slug/default";

describe("requests without a credential", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness({ RATE_LIMIT_PER_SOURCE: "6" });
  });
  afterAll(() => h?.close());

  it("spend the address's budget, then 429 with Retry-After and the error shape", async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 7; i++) statuses.push((await h.api("GET", ORG, { key: null })).status);
    expect(statuses).toEqual([401, 401, 401, 401, 401, 401, 429]);
    const limited = await h.api("POST", "/api/v1/auth/login", { key: null, body: { email: "nobody@example.com", password: "x" } });
    expect(limited.status).toBe(429);
    expect(limited.body).toMatchObject({ code: "TOO_MANY_REQUESTS", data: { code: "TOO_MANY_REQUESTS", httpStatus: 429, requestId: expect.any(String) } });
    expect(Number(limited.headers.get("retry-after"))).toBeGreaterThan(0);
  });
});

describe("valid credentials behind one address", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness({ RATE_LIMIT_PER_SOURCE: "6" });
  });
  afterAll(() => h?.close());

  it("devices and API keys sharing an address each keep their own budget; nor spend the address's budget", async () => {
    const tenant = await h.createTenant("Behind NAT");
    await ensureCa(h, tenant.key);
    const { token } = await createEnrollmentToken(h, tenant.key);
    const devices = [await enroll(h, token), await enroll(h, token)]; // two anonymous requests: 4 left
    const statuses = new Set<number>();
    for (let i = 0; i < 20; i++) statuses.add((await heartbeat(h, devices[i % 2])).status);
    for (let i = 0; i < 20; i++) statuses.add((await h.api("GET", ORG)).status);
    expect([...statuses]).toEqual([200]);
    const stored = await h.services.database.opened.raw.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM "Device" WHERE id = ANY($1::uuid[]) AND "lastSeenAt" IS NOT NULL`,
      [devices.map((d) => d.deviceId)],
    );
    expect(stored[0].n).toBe(2);

    // the address's budget is not spent: an anonymous request is still only refused for what it is
    expect((await h.api("GET", ORG, { key: null })).status).toBe(401);
  });
});

describe("refused credentials", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness({ RATE_LIMIT_PER_SOURCE: "4" });
  });
  afterAll(() => h?.close());

  it("spend the address's budget, API keys and device tokens alike; then the address is refused whatever it presents", async () => {
    const auditBefore = await h.services.prisma.auditEntry.count();
    const statuses = [
      (await h.api("GET", ORG, { key: "fmk_not-a-real-key" })).status,
      (await h.api("POST", "/api/v1/agent/heartbeat", { key: null, token: "not.a.jwt", body: {} })).status,
      (await h.api("GET", ORG, { key: null, token: "forged-session-token" })).status,
      (await h.api("POST", "/api/v1/agent/heartbeat", { key: null, token: "still.not.ajwt", body: {} })).status,
    ];
    expect(statuses).toEqual([401, 401, 401, 401]);
    // the fifth refusal is answered 429 instead
    const fifth = await h.api("GET", ORG, { key: "fmk_another-wrong-key" });
    expect(fifth.status).toBe(429);
    expect(fifth.body).toMatchObject({ code: "TOO_MANY_REQUESTS" });
    expect(Number(fifth.headers.get("retry-after"))).toBeGreaterThan(0);
    // now even the valid key is refused before any work, and nothing was written
    const valid = await h.api("GET", ORG);
    expect(valid.status).toBe(429);
    expect(Number(valid.headers.get("retry-after"))).toBeGreaterThan(0);
    const created = await h.api("POST", "/api/v1/enrollment-tokens", { body: { name: "while blocked" } });
    expect(created.status).toBe(429);
    expect(await h.services.prisma.enrollmentToken.count({ where: { name: "while blocked" } })).toBe(0);
    expect(await h.services.prisma.auditEntry.count()).toBe(auditBefore);
  });
});

describe("a credential sent to an operation that takes none", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness({ RATE_LIMIT_PER_SOURCE: "3" });
  });
  afterAll(() => h?.close());

  it("spends the address's budget all the same: an Authorization header is no way around it", async () => {
    const guess = (i: number) =>
      h.api("POST", "/api/v1/agent/enroll", {
        key: null,
        token: `made-up-session-token-${i}`,
        body: { enrollmentToken: `fmet_guess-${i}-${"x".repeat(30)}`, reportedDeviceId: `hw-guess-${i}`, csr: "not a CSR" },
      });
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await guess(i)).status);
    expect(statuses.slice(0, 3).every((s) => s >= 400 && s < 500 && s !== 429), String(statuses)).toBe(true);
    expect(statuses[3]).toBe(429);
    expect(await h.services.prisma.device.count()).toBe(0);
  });
});
