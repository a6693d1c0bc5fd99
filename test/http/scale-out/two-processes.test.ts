// Two real server processes (`src/main.ts` as child processes, each on its own port) on one
// PostgreSQL database, as behind a load balancer: queued jobs run exactly once, schedules
// exist once, an event and a log line published through one process reach a WebSocket and
// an SSE client of the other, sessions and refresh tokens work across them, a realtime ticket
// issued by one is accepted once by the other, and failed sign-ins count across both.
// PostgreSQL only: PGlite is one process by design (docs/scaling.md).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { startGitServer, type GitServer } from "../../support/git-server/index.js";
import { enqueueJob } from "../../../src/jobs/queue.js";
import { GIT_SYNC_JOB, gitSyncJobKey } from "../../../src/modules/registries/git/jobs.js";
import { heartbeat } from "../agent/fleet-support.js";
import { enrolledDevices, sendLogs, type EnrolledDevice } from "../telemetry/support.js";
import { openSse } from "../logs/sse-client.js";
import { appYaml } from "../registries-git/support.js";
import {
  connectRealtime, databaseUrlOf, eventually, SHARED_KEYS, startServerProcess, viaProcess, type RealtimeClient, type ServerProcess,
} from "./processes.js";

const ON_POSTGRES = Boolean(process.env.DATABASE_URL);
const LOGIN_FAILURES = 4;
/** requests per minute per credential; the whole file uses the tenant key far less than this */
const PER_CREDENTIAL = 150;

describe.skipIf(!ON_POSTGRES)("two server processes on one PostgreSQL (skipped without DATABASE_URL: PGlite serves one process)", () => {
  let h: Harness;
  let a: ServerProcess;
  let b: ServerProcess;
  let acme: Tenant;
  let git: GitServer;

  beforeAll(async () => {
    h = await createHarness({ ...SHARED_KEYS });
    acme = await h.createTenant("Acme Scale");
    const env = { DATABASE_URL: databaseUrlOf(h), RATE_LIMIT_LOGIN_FAILURES: String(LOGIN_FAILURES), RATE_LIMIT_PER_CREDENTIAL: String(PER_CREDENTIAL) };
    [a, b] = await Promise.all([startServerProcess("a", env, acme.key), startServerProcess("b", env, acme.key)]);
    git = await startGitServer();
  });

  afterAll(async () => {
    const codes = await Promise.all([a?.stop(), b?.stop()]);
    await git?.close();
    await h?.close();
    // Both stopped cleanly on SIGTERM (in-flight work finished, database closed).
    expect(codes).toEqual([0, 0]);
  });

  it("both processes answer, on different ports, from the same database", async () => {
    expect(a.url).not.toBe(b.url);
    const [fromA, fromB] = await Promise.all([a.api("GET", "/readyz"), b.api("GET", "/readyz")]);
    expect([fromA.status, fromB.status]).toEqual([200, 200]);
    const created = await a.api("POST", "/api/v1/enrollment-tokens", { body: { name: "seen by both" } });
    expect(created.status, created.text).toBe(201);
    const seen = await b.api("GET", "/api/v1/enrollment-tokens");
    expect(seen.body.items.map((t: { id: string }) => t.id)).toContain(created.body.id);
  });

  it("a queued job runs exactly once across both job runners; duplicates are refused; schedules exist once", async () => {
    // One application per registry (registry i reads only apps/i), so the syncs touch disjoint rows.
    const files = Object.fromEntries(Array.from({ length: 8 }, (_, i) => [`apps/${i}/app.yaml`, appYaml(`scale-${i}`, "1.0.0")]));
    const repo = await git.createRepo("scale-apps", files);
    const registries: string[] = [];
    for (let i = 0; i < 8; i++) {
      const res = await a.api("POST", "/api/v1/registries/git", { body: { name: `scale-${i}`, url: repo.url, path: `/apps/${i}`, syncIntervalMinutes: 0 } });
      expect(res.status, res.text).toBe(201);
      registries.push(res.body.id);
    }
    const jobIds: string[] = [];
    for (const registryId of registries) {
      const spec = { type: GIT_SYNC_JOB, payload: { organizationId: acme.org.id, registryId }, uniqueKey: gitSyncJobKey(registryId), maxAttempts: 3 };
      const id = await enqueueJob(h.services.prisma, spec);
      expect(id).not.toBeNull();
      jobIds.push(id!);
      // A second job for the same registry while the first is live: refused (unique key).
      expect(await enqueueJob(h.services.prisma, spec)).toBeNull();
    }
    const jobs = await eventually(async () => {
      const rows = await h.services.prisma.job.findMany({ where: { id: { in: jobIds } } });
      return rows.every((j) => j.state === "succeeded") && rows;
    }, 45_000, "the sync jobs to succeed");
    // Claimed once each (a second claim would have counted a second attempt) ...
    expect(jobs.map((j) => j.attempts)).toEqual(jobIds.map(() => 1));
    // ... and run once each: one sync audit entry per registry, one application version.
    for (const registryId of registries) {
      const syncs = await h.services.prisma.auditEntry.count({ where: { action: "registries.git.sync", entityId: registryId } });
      expect(syncs, `syncs of registry ${registryId}`).toBe(1);
    }
    const apps = await b.api("GET", "/api/v1/applications");
    expect(apps.body.items.map((x: { key: string }) => x.key).sort()).toEqual(registries.map((_, i) => `scale-${i}`).sort());

    // Every schedule has exactly one live run although both runners (re)create them.
    const live = await h.services.prisma.$queryRaw<Array<{ type: string; n: number }>>`
      SELECT "type", count(*)::int AS n FROM "Job" WHERE "type" LIKE 'schedule.%' AND "state" IN ('pending', 'running') GROUP BY "type"`;
    expect(live.length).toBeGreaterThan(3);
    for (const row of live) expect(row, row.type).toMatchObject({ n: 1 });
  });

  describe("events, logs, sessions, tickets, rate limits", () => {
    let device: EnrolledDevice;
    beforeAll(async () => {
      [device] = await enrolledDevices(viaProcess(h, a), acme, 1);
    });

    async function ticketFrom(p: ServerProcess) {
      const res = await p.api("POST", "/api/v1/realtime/ticket");
      expect(res.status, res.text).toBe(201);
      return res.body.ticket as string;
    }

    it("a realtime ticket issued by one process is accepted once by the other, and then by neither", async () => {
      const ticket = await ticketFrom(a);
      const client = await connectRealtime(b.url, ticket);
      expect("refused" in client ? client.refused : "open").toBe("open");
      (client as RealtimeClient).close();
      expect(await connectRealtime(a.url, ticket)).toEqual({ refused: 401 });
      expect(await connectRealtime(b.url, ticket)).toEqual({ refused: 401 });
    });

    it("a device status change published through one process reaches a WebSocket client of the other", async () => {
      const client = (await connectRealtime(b.url, await ticketFrom(b))) as RealtimeClient;
      try {
        const res = await heartbeat(viaProcess(h, a), device, { status: "error" });
        expect(res.status, res.text).toBe(200);
        const event = await client.next((m) => m.type === "device.status_changed" && m.data.deviceId === device.deviceId && m.data.to === "error");
        expect(event.data.organizationId).toBe(acme.org.id);
      } finally {
        client.close();
      }
    });

    it("a log line sent through one process reaches an SSE follower on the other", async () => {
      const stream = await openSse(`${b.url}/api/v1/devices/${device.deviceId}/logs/stream?tail=0`, { "x-api-key": acme.key });
      try {
        await stream.waitFor(1, "ready");
        const sent = await sendLogs(viaProcess(h, a), device, [{ timestamp: new Date().toISOString(), message: "from process a" }]);
        expect(sent.status, sent.text).toBe(200);
        const [line] = await stream.waitFor(1, undefined, 15_000);
        expect(JSON.parse(line.data).message).toBe("from process a");
      } finally {
        stream.close();
      }
    });

    it("a session created on one process works on the other; a refresh token works once across both; logout ends it everywhere", async () => {
      const login = await a.api("POST", "/api/v1/auth/login", { key: null, body: { email: acme.user.email, password: acme.user.password } });
      expect(login.status, login.text).toBe(200);
      const me = await b.api("GET", "/api/v1/tenant/context", { key: null, token: login.body.accessToken });
      expect(me.status, me.text).toBe(200);

      const refreshed = await b.api("POST", "/api/v1/auth/refresh", { key: null, body: { refreshToken: login.body.refreshToken } });
      expect(refreshed.status, refreshed.text).toBe(200);
      const again = await a.api("POST", "/api/v1/auth/refresh", { key: null, body: { refreshToken: login.body.refreshToken } });
      expect(again.status).toBe(401);
      expect((await a.api("GET", "/api/v1/tenant/context", { key: null, token: refreshed.body.accessToken })).status).toBe(200);

      const logout = await a.api("POST", "/api/v1/auth/logout", { key: null, token: refreshed.body.accessToken });
      expect(logout.status, logout.text).toBe(200);
      expect((await b.api("GET", "/api/v1/tenant/context", { key: null, token: refreshed.body.accessToken })).status).toBe(401);
    });

    it("a credential's request budget is spent across both processes", async () => {
      const created = await a.api("POST", `/api/v1/organizations/${acme.org.id}/api-keys`, { body: { name: "budget", permissions: ["devices:read"] } });
      expect(created.status, created.text).toBe(201);
      const key = created.body.key as string;
      // PER_CREDENTIAL requests, half through each process: all within the budget.
      for (let i = 0; i < PER_CREDENTIAL; i += 10) {
        const answers = await Promise.all(Array.from({ length: 10 }, (_, j) => ((i + j) % 2 === 0 ? a : b).api("GET", "/api/v1/enrollment-tokens", { key })));
        expect(answers.map((r) => r.status)).toEqual(Array(10).fill(200));
      }
      // Each process has seen only half of the budget; the shared counter is spent.
      for (const p of [a, b]) {
        const res = await p.api("GET", "/api/v1/enrollment-tokens", { key });
        expect(res.status, `${p.name}: ${res.text}`).toBe(429);
        expect(Number(res.headers.get("retry-after"))).toBeGreaterThan(0);
      }
      // Another credential is not affected.
      expect((await b.api("GET", "/api/v1/enrollment-tokens")).status).toBe(200);
    });

    it("failed sign-ins count across both processes: the budget is spent after alternating failures", async () => {
      const email = acme.user.email;
      for (let i = 0; i < LOGIN_FAILURES; i++) {
        const p = i % 2 === 0 ? a : b; // each process sees only half of the failures
        const res = await p.api("POST", "/api/v1/auth/login", { key: null, body: { email, password: `wrong-${i}` } });
        expect(res.status, res.text).toBe(401);
      }
      // Per-process counters would allow both (each saw LOGIN_FAILURES / 2); the shared store refuses,
      // even the right password.
      for (const p of [a, b]) {
        const res = await p.api("POST", "/api/v1/auth/login", { key: null, body: { email, password: acme.user.password } });
        expect(res.status, `${p.name}: ${res.text}`).toBe(429);
        expect(Number(res.headers.get("retry-after"))).toBeGreaterThan(0);
      }
    });
  });
});
