import { afterAll, beforeAll, expect, it } from "vitest";
import { ADMIN_EMAIL, ADMIN_PASSWORD, createHarness, type Harness } from "../support/harness.js";
import { createEnrollmentToken, enroll, ensureCa, heartbeat } from "./agent/fleet-support.js";

let h: Harness;
beforeAll(async () => {
  h = await createHarness({ RATE_LIMIT_PER_CREDENTIAL: "5", RATE_LIMIT_PER_DEVICE: "4", RATE_LIMIT_LOGIN_FAILURES: "3" });
});
afterAll(() => h?.close());

it("answers 429 with Retry-After once a credential has spent its budget, and other credentials go on", async () => {
  const key = await h.createKey(h.defaultOrgId, ["*"]);
  const statuses: number[] = [];
  for (let i = 0; i < 7; i++) statuses.push((await h.api("GET", "/api/v1/organizations/by-slug/default", { key })).status);
  expect(statuses.slice(0, 5)).toEqual([200, 200, 200, 200, 200]);
  expect(statuses.slice(5)).toEqual([429, 429]);
  const limited = await h.api("GET", "/api/v1/organizations/by-slug/default", { key });
  expect(limited.body.code).toBe("TOO_MANY_REQUESTS");
  expect(Number(limited.headers.get("retry-after"))).toBeGreaterThan(0);
  expect((await h.api("GET", "/api/v1/organizations/by-slug/default")).status).toBe(200);
});

it("counts a user's requests across all their sessions: a second sign-in buys no fresh budget", async () => {
  const user = (await h.createTenant("Budget Users")).user;
  const first = await h.login(user.email, user.password);
  const second = await h.login(user.email, user.password);
  expect(first).not.toBe(second);
  const statuses: number[] = [];
  for (let i = 0; i < 3; i++) statuses.push((await h.api("GET", "/api/v1/profile", { key: null, token: first })).status);
  for (let i = 0; i < 3; i++) statuses.push((await h.api("GET", "/api/v1/profile", { key: null, token: second })).status);
  expect(statuses).toEqual([200, 200, 200, 200, 200, 429]);
  const limited = await h.api("GET", "/api/v1/profile", { key: null, token: first });
  expect(limited.status).toBe(429);
  expect(limited.body).toMatchObject({ code: "TOO_MANY_REQUESTS" });
  expect(Number(limited.headers.get("retry-after"))).toBeGreaterThan(0);
  // the tRPC surface spends the same budget
  const viaTrpc = await h.api("GET", "/trpc/profile.get", { key: null, token: second });
  expect(viaTrpc.status).toBe(429);
  // another user, and an API key, keep their own budgets
  expect((await h.api("GET", "/api/v1/profile")).status).toBe(200);
});

it("limits failed sign-ins per account: after 3 failures even the right password waits", async () => {
  for (let i = 0; i < 3; i++) {
    const res = await h.api("POST", "/api/v1/auth/login", { key: null, body: { email: ADMIN_EMAIL, password: "wrong-password" } });
    expect(res.status).toBe(401);
  }
  const blocked = await h.api("POST", "/api/v1/auth/login", { key: null, body: { email: ADMIN_EMAIL, password: ADMIN_PASSWORD } });
  expect(blocked.status).toBe(429);
  expect(Number(blocked.headers.get("retry-after"))).toBeGreaterThan(0);
  // Another account from the same address is not blocked by this one's failures.
  const other = await h.createTenant("Other Login");
  const ok = await h.api("POST", "/api/v1/auth/login", { key: null, body: { email: other.user.email, password: other.user.password } });
  expect(ok.status).toBe(200);
});

it("counts a device's requests whatever token it signs, across agent operations", async () => {
  const tenant = await h.createTenant("Budget Devices");
  await ensureCa(h, tenant.key);
  const { token } = await createEnrollmentToken(h, tenant.key);
  const [noisy, quiet] = [await enroll(h, token), await enroll(h, token)];
  const statuses: number[] = [];
  for (let i = 0; i < 3; i++) statuses.push((await heartbeat(h, noisy, {}, await noisy.token({ issuedAt: Math.floor(Date.now() / 1000) - i }))).status);
  // the fourth request is another agent operation, with yet another token
  const logs = await h.api("POST", "/api/v1/agent/logs", { key: null, token: await noisy.token({ lifetimeSeconds: 120 }), body: { entries: [{ timestamp: new Date().toISOString(), message: "hello" }] } });
  statuses.push(logs.status);
  const limited = await heartbeat(h, noisy, {}, await noisy.token({ lifetimeSeconds: 60 }));
  expect([...statuses, limited.status]).toEqual([200, 200, 200, 200, 429]);
  expect(limited.body).toMatchObject({ code: "TOO_MANY_REQUESTS" });
  expect(Number(limited.headers.get("retry-after"))).toBeGreaterThan(0);
  const refusedLogs = await h.api("POST", "/api/v1/agent/logs", { key: null, token: await noisy.token(), body: { entries: [{ timestamp: new Date().toISOString(), message: "dropped" }] } });
  expect(refusedLogs.status).toBe(429);
  expect(Number(refusedLogs.headers.get("retry-after"))).toBeGreaterThan(0);
  // telemetry too: the agent keeps the batch and resends it after Retry-After (docs/telemetry.md)
  const refusedTelemetry = await h.api("POST", "/api/v1/agent/telemetry", { key: null, token: await noisy.token(), body: { snapshots: [{ timestamp: new Date().toISOString(), cpuUsagePercent: 1 }] } });
  expect(refusedTelemetry.status).toBe(429);
  expect(refusedTelemetry.body).toMatchObject({ code: "TOO_MANY_REQUESTS", data: { httpStatus: 429 } });
  expect(Number(refusedTelemetry.headers.get("retry-after"))).toBeGreaterThan(0);
  expect((await h.services.database.opened.raw.query<{ n: number }>(`SELECT count(*)::int AS n FROM "TelemetrySnapshot" WHERE "deviceId" = $1::uuid`, [noisy.deviceId]))[0].n).toBe(0);
  // nothing of the refused request was stored; the other device goes on
  expect((await h.services.database.opened.raw.query<{ n: number }>(`SELECT count(*)::int AS n FROM "DeviceLog" WHERE "deviceId" = $1::uuid`, [noisy.deviceId]))[0].n).toBe(1);
  expect((await heartbeat(h, quiet)).status).toBe(200);
});
