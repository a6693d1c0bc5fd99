// Benchmark: a day in the life of a fleet (issue 52), everything on at once, measured every
// minute. Three processes, each measured apart: the service (bench/support/serve.ts, with its
// job runner: alert evaluation, retention, partitions, rollups, config source polls, the
// rollout job), the load generator (bench/support/fleet-load.ts: the simulator's devices over
// the real agent protocol) and this one (the operator's setup, five people in the console,
// the sampling); PostgreSQL's CPU from /proc (this run's database's backends only).
//
// * FLEET_DAY_DEVICES devices enroll over the real protocol (key, CSR, certificate each; with
//   20 enrollment tokens, one per site), then each heartbeats every 60 s, sends a telemetry
//   snapshot every 60 s and a batch of one to three log lines every 30 s; every minute 1 % of them go offline
//   and those offline for FLEET_DAY_OFFLINE_MINUTES come back with their backlog.
// * At once: a staged rollout to every device (canary 1 %, batches 10 % / 30 % / 100 %,
//   success threshold 95 %), a continuous deployment of a second application to the devices
//   labelled `returned=yes` (the operator labels each device that comes back), alert rules
//   over the fleet (offline, CPU, failed deployments, and one from the config source), the
//   retention job with an expired day of snapshots and log lines to drop, a config source on
//   a Git smart-HTTP server on loopback (test/support/git-server) polled every minute and
//   changed every ten, and five people in the console through the API at a person's pace
//   (overview, device table with a label filter, a device's telemetry charts, the rollout).
// * Every minute and at the end: p50/p99/max and errors of each kind of request, intakes
//   (acknowledged against stored), the rollout's progress, the age of the oldest alert rule
//   evaluation, CPU and resident memory of the service and the load generator, PostgreSQL's
//   CPU and the database's size. The per-minute series go to FLEET_DAY_RESULTS/<run>/
//   (minutes.csv, minutes.json, summary.json); `npx tsx bench/support/fleet-day-chart.ts
//   <run folder>` draws chart.svg from them.
//
//   npm run bench -- fleet-day
//   FLEET_DAY_DEVICES=100000 FLEET_DAY_MINUTES=60 FLEET_DAY_OFFLINE_MINUTES=4 FLEET_DAY_ENROLL_CONCURRENCY=16 FLEET_DAY_LOG_SECONDS=30
//   FLEET_DAY_EXPIRED_ROWS=100000 FLEET_DAY_RESULTS=bench/results BENCH_DB=postgres|pglite|both (default postgres)
//   BENCH_DATABASE_URL=postgresql://... (a database of the run's own on it; default: a throwaway server)
//   BENCH_PROFILE=<dir> (the service's CPU profile of the enrollment: npx tsx bench/support/profile-summary.ts <file>)
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { JsonClient } from "../agent/src/core/json-client.js";
import { startGitServer, type GitServer } from "../test/support/git-server/index.js";
import { startChild, type Child } from "./support/child.js";
import { machineLine, postgresCpuTracker } from "./support/machine.js";
import { onEachDatabase } from "./support/postgres.js";
import { RequestStats, timedRequest, type KindFigures } from "./support/request-stats.js";
import { fleetDayFiles, type MinuteRow } from "./support/fleet-day-results.js";

const DEVICES = Number(process.env.FLEET_DAY_DEVICES ?? 100_000);
const MINUTES = Number(process.env.FLEET_DAY_MINUTES ?? 60);
const OFFLINE_MINUTES = Number(process.env.FLEET_DAY_OFFLINE_MINUTES ?? 4);
const ENROLL_CONCURRENCY = Number(process.env.FLEET_DAY_ENROLL_CONCURRENCY ?? 16);
/** seed the devices in bulk (their own keys, certificates signed in bulk: bench/support/seed-identities.ts) instead of enrolling each over the protocol */
const SEED = process.env.FLEET_DAY_SEED === "1";
/** a batch of one to three log lines (two on average) every this many seconds per device */
const LOG_SECONDS = Number(process.env.FLEET_DAY_LOG_SECONDS ?? 30);
const EXPIRED_ROWS = Number(process.env.FLEET_DAY_EXPIRED_ROWS ?? 100_000);
const RESULTS = process.env.FLEET_DAY_RESULTS ?? path.join(path.dirname(fileURLToPath(import.meta.url)), "results");
const PEOPLE = 5;
const SITES = 20;
const ADMIN_KEY = "fm_bench" + "F".repeat(36);
/** the service's own settings: the interval the devices keep (three missed mark one offline), alert evaluation every minute */
const SERVICE_ENV = { HEARTBEAT_INTERVAL_SECONDS: "60", ALERT_EVALUATION_INTERVAL_SECONDS: "60" };
const ALERT_INTERVAL_S = 60;
/** the kinds of request every minute reports, in this order */
const DEVICE_KINDS = ["heartbeat", "telemetry", "logs", "label (operator)"];
const CONSOLE_PAGES = ["overview", "device table", "telemetry charts", "rollout page"] as const;
const KINDS = [...DEVICE_KINDS, ...CONSOLE_PAGES.map((p) => `console ${p}`)];

const STRATEGY = {
  type: "staged", canary: { percent: 1 }, batches: [{ percent: 10 }, { percent: 30 }, { percent: 100 }],
  successThreshold: 95, failureThreshold: 20, autoAdvance: true, batchTimeoutSeconds: 3600,
};

const appManifest = (id: string, version: string) => `apiVersion: fleet.app/v1alpha1
kind: ApplicationManifest
metadata:
  id: ${id}
  name: ${id}
  version: ${version}
  catalog: { category: bench }
deploymentProfiles:
  - id: compose-main
    type: compose
    components:
      - name: main
        properties:
          repository: oci://registry.example/apps/${id}
          revision: ${version}
`;
const configDocuments = (revision: number) => ({
  "fleet/roles.yaml": `apiVersion: fleet.app/v1
kind: Role
metadata: { name: field-readers }
spec:
  description: revision ${revision} of the field team's read access
  permissions: [devices:read, telemetry:read]
`,
  "fleet/alerts.yaml": `apiVersion: fleet.app/v1
kind: AlertRule
metadata: { name: long-offline }
spec:
  condition: { type: device_offline, durationSeconds: 600 }
`,
});

const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MB`;
const n = (x: number) => x.toLocaleString("en");
const ms = (x: number) => (x >= 100 ? x.toFixed(0) : x.toFixed(1));
const sleep = (t: number) => new Promise((r) => setTimeout(r, t));

/** The operator's API with the organization's key; a failure stops the setup with the answer. */
function operatorApi(client: JsonClient, key: () => string) {
  return async (method: string, p: string, body?: unknown) => {
    const res = await client.request<any>(method, p, body, { "x-api-key": key() });
    if (res.status >= 300) throw new Error(`${method} ${p}: ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
    return res.body;
  };
}

/** Organization, key, CA, one enrollment token per site, the two applications from a Git registry, the config source, the alert rules. */
async function setUp(url: string, git: GitServer) {
  const client = new JsonClient(url, 8, 600_000);
  let key = ADMIN_KEY;
  const api = operatorApi(client, () => key);
  const org = await api("POST", "/api/v1/organizations", { name: "Fleet Day" });
  key = (await api("POST", `/api/v1/organizations/${org.id}/api-keys`, { name: "fleet-day", permissions: ["*"] })).key;
  await api("POST", "/api/v1/ca-certificates/generate", { name: "fleet-day-ca", commonName: "Fleet Day CA" });
  const tokens: string[] = [];
  for (let site = 0; site < SITES; site++) {
    tokens.push((await api("POST", "/api/v1/enrollment-tokens", { name: `site-${site}`, labels: { fleet: "day", site: `site-${site}` } })).token);
  }
  const apps = await git.createRepo("apps", { "edge-gateway/app.yaml": appManifest("edge-gateway", "1.0.0"), "returns-kit/app.yaml": appManifest("returns-kit", "1.0.0") });
  const registry = await api("POST", "/api/v1/registries/git", { name: "apps", url: apps.url, branch: "main" });
  const synced = await api("POST", `/api/v1/registries/git/${registry.id}/sync`);
  if (!synced.success) throw new Error(`the registry sync failed: ${JSON.stringify(synced).slice(0, 300)}`);
  const list = await api("GET", "/api/v1/applications?limit=100");
  const appId = (appKey: string) => {
    const app = (list.items ?? list.data ?? list).find((a: { key: string }) => a.key === appKey);
    if (!app) throw new Error(`application ${appKey} not in the catalog after the sync: ${JSON.stringify(synced).slice(0, 500)} ${JSON.stringify(list).slice(0, 500)}`);
    return app.id as string;
  };
  const config = await git.createRepo("fleet-config", configDocuments(0));
  const source = await api("POST", `/api/v1/organizations/${org.id}/config/sources`, { name: "fleet", url: config.url, branch: "main", path: "fleet", pollIntervalSeconds: 60 });
  await api("POST", `/api/v1/organizations/${org.id}/config/sources/${source.id}/sync`);
  for (const [name, condition] of [
    ["offline", { type: "device_offline", durationSeconds: 120 }],
    ["hot", { type: "metric_threshold", metric: "cpuUsagePercent", operator: ">", threshold: 95, durationSeconds: 300 }],
    ["failed deployments", { type: "deployment_failed" }],
    ["config source failing", { type: "config_source_failing" }],
  ] as const) await api("POST", "/api/v1/alert-rules", { name, condition, labelSelector: name === "hot" || name === "offline" ? { fleet: "day" } : undefined });
  return { client, api, key, org, tokens, apps: { rollout: appId("edge-gateway"), continuous: appId("returns-kit") } };
}

/** Five people in the console, each opening a page, reading it 5-15 s, opening the next. */
function consolePeople(url: string, key: string, rolloutId: () => string | null, stats: RequestStats) {
  const client = new JsonClient(url, 2 * PEOPLE);
  let running = true;
  let deviceIds: string[] = [];
  const get = (p: string) => client.request<any>("GET", p, undefined, { "x-api-key": key });
  /** a page: its API calls at once, as the console makes them; timed until the last answer, its worst status counted */
  const page = async (name: (typeof CONSOLE_PAGES)[number], paths: string[]) => {
    const answers = await timedRequest(stats, `console ${name}`, async () => {
      const all = await Promise.all(paths.map(get));
      return { status: Math.max(...all.map((a) => a.status)), all };
    }).catch(() => null);
    return answers?.all ?? [];
  };
  const visits: Record<(typeof CONSOLE_PAGES)[number], () => Promise<unknown>> = {
    overview: () => page("overview", ["/api/v1/groups/stats", "/api/v1/fleet/health", "/api/v1/groups/by-label/site"]),
    "device table": async () => {
      const [list] = await page("device table", [`/api/v1/devices?labels=site=site-${Math.floor(Math.random() * SITES)}&limit=50`]);
      const ids = (list?.body?.data ?? list?.body?.items ?? []).map((d: { id: string }) => d.id);
      if (ids.length) deviceIds = ids;
    },
    "telemetry charts": async () => {
      if (!deviceIds.length) return;
      const id = deviceIds[Math.floor(Math.random() * deviceIds.length)];
      const to = new Date().toISOString();
      const from = new Date(Date.now() - 3600_000).toISOString();
      await page("telemetry charts", [`/api/v1/devices/${id}/telemetry?from=${from}&to=${to}&interval=1m`, `/api/v1/devices/${id}`]);
    },
    "rollout page": async () => {
      const id = rolloutId();
      if (id) await page("rollout page", [`/api/v1/deployments/${id}`, `/api/v1/deployments/${id}/rollout`]);
    },
  };
  const done = Promise.all(Array.from({ length: PEOPLE }, async (_, person) => {
    await sleep(person * 2000);
    for (let i = person; running; i++) {
      await visits[CONSOLE_PAGES[i % CONSOLE_PAGES.length]]();
      await sleep(5000 + Math.random() * 10_000);
    }
  }));
  return {
    async stop() {
      running = false;
      await done;
      client.close();
    },
  };
}

function kindLine(kind: string, f: KindFigures | undefined) {
  if (!f || f.count === 0) return `${kind} -`;
  const errors = f.deferred + f.refused + f.failed + f.unanswered;
  return `${kind} ${n(f.count)} p50 ${ms(f.p50)} p99 ${ms(f.p99)} max ${ms(f.max)} ms` +
    (errors ? ` (${[f.deferred && `${f.deferred} deferred 429/503`, f.refused && `${f.refused} other 4xx`, f.failed && `${f.failed} other 5xx`, f.unanswered && `${f.unanswered} unanswered`].filter(Boolean).join(", ")})` : "");
}

async function run(label: string, databaseUrl?: string) {
  console.log(`\n== ${label}`);
  const git = await startGitServer();
  const database = databaseUrl ? new URL(databaseUrl) : null;
  const pgPort = database ? Number(database.port || 5432) : null;
  const pgDatabase = database ? database.pathname.slice(1) : undefined;
  const pgCpu = pgPort && pgDatabase ? postgresCpuTracker(pgPort, pgDatabase) : () => null;
  // read every 5 s besides the samples: a pool connection that closes keeps what was last read of it
  const pgReader = setInterval(pgCpu, 5000);
  let service: Child | null = null;
  let load: Child | null = null;
  try {
    service = await startChild("serve.ts", {
      BENCH_ADMIN_KEY: ADMIN_KEY, BENCH_JOBS: "1", BENCH_OLD_DAY_ROWS: String(EXPIRED_ROWS), BENCH_SERVICE_ENV: JSON.stringify(SERVICE_ENV),
      ...(databaseUrl ? { BENCH_DATABASE: databaseUrl } : {}),
    });
    const url = service.info.url as string;
    const setup = await setUp(url, git);
    const { api } = setup;
    const first = await service.command(`counts ${new Date().toISOString()}`);
    console.log(`set up: organization, CA, ${SITES} enrollment tokens, 2 applications from a Git registry, a config source, 4 alert rules; ` +
      `an expired day of ${n(EXPIRED_ROWS)} snapshots and ${n(EXPIRED_ROWS)} log lines for the retention job; database ${mb(first.databaseBytes)}`);

    // Enrollment, over the real protocol, in the load generator's process.
    const serviceBeforeEnroll = await service.command("stats");
    const pgBeforeEnroll = pgCpu();
    // BENCH_PROFILE=<dir>: the service's CPU profile of the enrollment (bench/support/serve.ts; profile-summary.ts reads it)
    if (process.env.BENCH_PROFILE) service.process.kill("SIGUSR2");
    // FLEET_DAY_SEED=1: the devices' own keys, their certificates issued in bulk (bench/support/seed-identities.ts)
    const seedDir = SEED ? fs.mkdtempSync(path.join(os.tmpdir(), "fleet-day-seed-")) : undefined;
    const starting = startChild("fleet-load.ts", {
      FLEET_LOAD: JSON.stringify({
        url, tokens: setup.tokens, devices: DEVICES, enrollConcurrency: ENROLL_CONCURRENCY,
        heartbeatMs: 60_000, telemetryMs: 60_000, logsMs: LOG_SECONDS * 1000, busyHeartbeatMs: 10_000,
        offlinePercent: 1, offlineMinutes: OFFLINE_MINUTES, apiKey: setup.key, returnLabel: { key: "returned", value: "yes" },
        idPrefix: "day", seed: 52,
        ...(seedDir ? { seedDir, seedLabels: Array.from({ length: SITES }, (_, site) => ({ fleet: "day", site: `site-${site}` })) } : {}),
      }),
    }, 48 * 3600_000);
    if (seedDir) {
      // the load generator writes its devices' public keys, the service signs and inserts them
      while (!fs.existsSync(path.join(seedDir, "requests.ready"))) await sleep(500);
      const seeded = await service.command(`seed-identities ${setup.org.id} ${path.join(seedDir, "requests.jsonl")} ${path.join(seedDir, "answers.jsonl")}`);
      fs.writeFileSync(path.join(seedDir, "answers.jsonl.ready"), "");
      console.log(`seeded ${n(seeded.seeded)} devices (their own keys, certificates signed by the organization's CA, inserted in bulk) in ${seeded.seconds.toFixed(1)} s`);
    }
    load = await starting;
    if (seedDir) fs.rmSync(seedDir, { recursive: true, force: true });
    const enroll = load.info;
    if (process.env.BENCH_PROFILE) service.process.kill("SIGUSR2");
    const serviceAfterEnroll = await service.command("stats");
    const enrollServiceCpu = (serviceAfterEnroll.cpu.user + serviceAfterEnroll.cpu.system - serviceBeforeEnroll.cpu.user - serviceBeforeEnroll.cpu.system) / 1e6;
    const pgAfterEnroll = pgCpu();
    console.log(`${SEED ? "seeded (keys made, certificates adopted)" : "enrolled"} ${n(enroll.enrolled)} devices in ${enroll.enrollSeconds.toFixed(1)} s (${(enroll.enrolled / enroll.enrollSeconds).toFixed(1)}/s, ${ENROLL_CONCURRENCY} at a time; ` +
      `${enroll.enrollFailed} failed${enroll.enrollFailed ? `: ${enroll.lastError}` : ""}); CPU: service ${enrollServiceCpu.toFixed(1)} s, load generator ${(enroll.enrollCpuMicros / 1e6).toFixed(1)} s` +
      (pgBeforeEnroll !== null && pgAfterEnroll !== null ? `, PostgreSQL ${((pgAfterEnroll - pgBeforeEnroll) / 1e6).toFixed(1)} s` : "") +
      `; at this rate ${n(100_000)} devices would take ${(100_000 / (enroll.enrolled / enroll.enrollSeconds) / 60).toFixed(0)} min`);
    if (enroll.enrolled === 0) throw new Error("no device enrolled");

    // The day starts: traffic, the staged rollout to everyone, the continuous deployment, the people.
    const since = new Date(Date.now() - 1000).toISOString();
    await load.command("start");
    const trafficStarted = Date.now();
    const rollout = await api("POST", "/api/v1/deployments", {
      name: "edge-gateway everywhere", applicationId: setup.apps.rollout, version: "1.0.0", profileId: "compose-main",
      target: { labelSelector: { fleet: "day" } }, strategy: STRATEGY,
    });
    const r0 = performance.now();
    await api("POST", `/api/v1/deployments/${rollout.id}/start`);
    const rolloutStartMs = performance.now() - r0;
    const continuous = await api("POST", "/api/v1/deployments", {
      name: "returns-kit on returning devices", applicationId: setup.apps.continuous, version: "1.0.0", profileId: "compose-main",
      target: { labelSelector: { returned: "yes" } }, continuous: true,
    });
    // started once the first returning device carries the label (a start that matches no device is refused)
    let continuousStarted = false;
    console.log(`rollout started (start request ${rolloutStartMs.toFixed(0)} ms: freeze ${n(enroll.enrolled)} devices, plan, dispatch the canary); ` +
      `the continuous deployment starts when the first device returns (after ${OFFLINE_MINUTES} min)`);
    const consoleStats = new RequestStats();
    const people = consolePeople(url, setup.key, () => rollout.id, consoleStats);

    const rows: MinuteRow[] = [];
    let previous = { at: Date.now(), service: serviceAfterEnroll, load: null as Record<string, any> | null, pg: pgCpu() };
    const loadCpuStart = await load.command("stats");
    previous.load = loadCpuStart;
    const sizeAtStart = first.databaseBytes;
    let rolloutDoneAt: number | null = null;
    let configRevision = 0;
    let retentionDroppedAt: number | null = null;
    for (let minute = 1; minute <= MINUTES + 1; minute++) {
      const last = minute > MINUTES;
      if (!last) await sleep(Math.max(0, trafficStarted + minute * 60_000 - Date.now()));
      if (!last && minute % 10 === 0) await git.commit("fleet-config", configDocuments(++configRevision));
      if (last) {
        // the end: the people leave, the devices send what they still keep, then the last sample
        await people.stop();
        await load.command("stop");
      }
      const at = Date.now();
      // the devices' side first: what the service wrote and stored, read after, includes everything they saw acknowledged
      const gen = await load.command("stats");
      const svc = await service.command("stats");
      const counts = await service.command(`counts ${since}`);
      const pg = pgCpu();
      if (!continuousStarted && !last && gen.labelled > 0) {
        await api("POST", `/api/v1/deployments/${continuous.id}/start`);
        continuousStarted = true;
      }
      const deployment = await api("GET", `/api/v1/deployments/${rollout.id}`);
      const joined = await api("GET", `/api/v1/deployments/${continuous.id}`);
      const rules = await api("GET", "/api/v1/alert-rules?limit=100");
      const ruleList: { lastEvaluatedAt: string | null }[] = rules.data ?? rules.items ?? rules;
      const alertAge = Math.max(...ruleList.map((r) => (r.lastEvaluatedAt ? Math.max(0, at - Date.parse(r.lastEvaluatedAt)) / 1000 : Infinity)));
      if (deployment.completedAt && rolloutDoneAt === null) rolloutDoneAt = Date.parse(deployment.completedAt);
      if (counts.expiredSnapshotsKept === false && counts.expiredLogsKept === false && retentionDroppedAt === null) retentionDroppedAt = at;
      const wall = (at - previous.at) * 1000;
      const cpuPercent = (a: Record<string, any>, b: Record<string, any>) => ((b.cpu.user + b.cpu.system - a.cpu.user - a.cpu.system) / wall) * 100;
      const window = { ...gen.window, ...consoleStats.window() } as Record<string, KindFigures>;
      const totals = { ...gen.totals, ...consoleStats.totals() } as Record<string, KindFigures>;
      const row: MinuteRow = {
        minute: last ? MINUTES + 1 : minute, at: new Date(at).toISOString(), final: last, loadAverage: +os.loadavg()[0].toFixed(2),
        kinds: Object.fromEntries(KINDS.map((k) => [k, window[k] ?? null])),
        heartbeatsAcknowledged: totals.heartbeat?.ok ?? 0, heartbeatsWritten: svc.rows,
        snapshotsAcknowledged: totals.telemetry?.items ?? 0, snapshotsStored: counts.snapshots,
        logLinesAcknowledged: totals.logs?.items ?? 0, logLinesStored: counts.logLines,
        snapshotsWaiting: gen.waiting.snapshots, logLinesWaiting: gen.waiting.logLines,
        devicesOffline: gen.offline, devicesLabelled: gen.labelled,
        rolloutState: deployment.rolloutState, rolloutRunning: deployment.progress.running ?? 0, rolloutFailed: deployment.progress.failed ?? 0,
        rolloutDevices: deployment.progress.total ?? 0,
        continuousJoined: joined.progress.joined ?? 0, continuousRunning: joined.progress.running ?? 0,
        alertEvaluationAgeSeconds: Number.isFinite(alertAge) ? +alertAge.toFixed(1) : null,
        serviceCpuPercent: +cpuPercent(previous.service, svc).toFixed(1), serviceRssMb: +(svc.memory.rss / 1048576).toFixed(1),
        loadGeneratorCpuPercent: +cpuPercent(previous.load!, gen).toFixed(1), loadGeneratorRssMb: +(gen.memory.rss / 1048576).toFixed(1),
        postgresCpuPercent: pg !== null && previous.pg !== null ? +(((pg - previous.pg) / wall) * 100).toFixed(1) : null,
        databaseMb: +(counts.databaseBytes / 1048576).toFixed(1), databaseGrowthMb: +((counts.databaseBytes - sizeAtStart) / 1048576).toFixed(1),
        expiredDayDropped: counts.expiredSnapshotsKept === false && counts.expiredLogsKept === false,
      };
      rows.push(row);
      previous = { at, service: svc, load: gen, pg };
      printMinute(row, last);
      if (gen.lastError && DEVICE_KINDS.some((kind) => row.kinds[kind] && row.kinds[kind]!.count > row.kinds[kind]!.ok)) console.log(`  last device error: ${gen.lastError}`);
    }

    // The end.
    const totals = { ...(rows.length ? (await load.command("stats")).totals : {}), ...consoleStats.totals() } as Record<string, KindFigures>;
    const steady = rows.filter((r) => !r.final && r.minute > 10);
    const rss = (r: MinuteRow | undefined) => r?.serviceRssMb ?? null;
    const mean = (xs: (number | null)[]) => { const v = xs.filter((x): x is number => x !== null); return v.length ? v.reduce((a, b) => a + b, 0) / v.length : NaN; };
    const end = rows.at(-1)!;
    const summary = {
      label, machine: machineLine(), devices: DEVICES, minutes: MINUTES, enrolled: enroll.enrolled, enrollSeconds: +enroll.enrollSeconds.toFixed(1),
      enrollPerSecond: +(enroll.enrolled / enroll.enrollSeconds).toFixed(2), enrollServiceCpuSeconds: +enrollServiceCpu.toFixed(1),
      enrollLoadGeneratorCpuSeconds: +(enroll.enrollCpuMicros / 1e6).toFixed(1),
      requests: totals,
      intake: {
        heartbeats: { acknowledged: end.heartbeatsAcknowledged, written: end.heartbeatsWritten },
        snapshots: { acknowledged: end.snapshotsAcknowledged, stored: end.snapshotsStored, stillOnDevices: end.snapshotsWaiting },
        logLines: { acknowledged: end.logLinesAcknowledged, stored: end.logLinesStored, stillOnDevices: end.logLinesWaiting },
      },
      rollout: { startRequestMs: +rolloutStartMs.toFixed(0), state: end.rolloutState, running: end.rolloutRunning, failed: end.rolloutFailed,
        completedAfterSeconds: rolloutDoneAt ? +((rolloutDoneAt - trafficStarted) / 1000).toFixed(0) : null },
      continuous: { joined: end.continuousJoined, running: end.continuousRunning },
      alertEvaluationAgeMaxSeconds: Math.max(...rows.map((r) => r.alertEvaluationAgeSeconds ?? 0)),
      retentionDroppedExpiredDayAfterSeconds: retentionDroppedAt ? +((retentionDroppedAt - trafficStarted) / 1000).toFixed(0) : null,
      service: { cpuPercentMean: +mean(rows.map((r) => r.serviceCpuPercent)).toFixed(1), rssMbAtMinute10: rss(rows.find((r) => r.minute === 10)), rssMbMax: Math.max(...rows.map((r) => r.serviceRssMb)), rssMbEnd: rss(end),
        rssGrowthAfterMinute10Mb: steady.length ? +(Math.max(...steady.map((r) => r.serviceRssMb)) - steady[0].serviceRssMb).toFixed(1) : null },
      loadGenerator: { cpuPercentMean: +mean(rows.map((r) => r.loadGeneratorCpuPercent)).toFixed(1), rssMbMax: Math.max(...rows.map((r) => r.loadGeneratorRssMb)) },
      postgres: { cpuPercentMean: +mean(rows.map((r) => r.postgresCpuPercent)).toFixed(1), databaseMbStart: +(sizeAtStart / 1048576).toFixed(1), databaseMbEnd: end.databaseMb, growthMb: end.databaseGrowthMb },
    };
    printSummary(summary);
    const folder = fleetDayFiles(RESULTS, label, rows, summary);
    console.log(`\nper-minute series and summary: ${folder} (draw them: npx tsx bench/support/fleet-day-chart.ts ${folder})`);
    setup.client.close();
    return summary;
  } finally {
    clearInterval(pgReader);
    if (load) await load.stop();
    if (service) await service.stop();
    await git.close();
  }
}

function printMinute(r: MinuteRow, last: boolean) {
  const k = r.kinds;
  console.log(`\n${last ? "after the drain" : `minute ${r.minute}`} (${r.at.slice(11, 19)} UTC, load ${r.loadAverage}): ${DEVICE_KINDS.map((kind) => kindLine(kind, k[kind] ?? undefined)).join(" | ")}`);
  console.log(`  intake (since the start): heartbeats acknowledged ${n(r.heartbeatsAcknowledged)} / written ${n(r.heartbeatsWritten)}; ` +
    `snapshots ${n(r.snapshotsAcknowledged)} / stored ${n(r.snapshotsStored)}; log lines ${n(r.logLinesAcknowledged)} / stored ${n(r.logLinesStored)}; ` +
    `on devices (offline or deferred): ${n(r.snapshotsWaiting)} snapshots, ${n(r.logLinesWaiting)} log lines; ${n(r.devicesOffline)} devices offline`);
  console.log(`  rollout ${r.rolloutState}: ${n(r.rolloutRunning)} of ${n(r.rolloutDevices)} running, ${n(r.rolloutFailed)} failed; ` +
    `continuous: ${n(r.continuousJoined)} joined, ${n(r.continuousRunning)} running (${n(r.devicesLabelled)} labelled on return); ` +
    `oldest alert rule evaluation ${r.alertEvaluationAgeSeconds ?? "never"} s ago (every ${ALERT_INTERVAL_S} s); expired day ${r.expiredDayDropped ? "dropped" : "kept"}`);
  console.log(`  CPU (100 % = one core): service ${r.serviceCpuPercent} %, load generator ${r.loadGeneratorCpuPercent} %` +
    (r.postgresCpuPercent !== null ? `, PostgreSQL ${r.postgresCpuPercent} %` : "") +
    `; RSS service ${r.serviceRssMb} MB, load generator ${r.loadGeneratorRssMb} MB; database ${r.databaseMb} MB (${r.databaseGrowthMb >= 0 ? "+" : ""}${r.databaseGrowthMb} MB since the start)`);
  console.log(`  console: ${CONSOLE_PAGES.map((p) => kindLine(p, k[`console ${p}`] ?? undefined)).join(" | ")}`);
}

function printSummary(s: Record<string, any>) {
  console.log(`\n== summary: ${s.label}, ${n(s.enrolled)} devices, ${s.minutes} min`);
  console.log(`enrollment ${s.enrollSeconds} s (${s.enrollPerSecond}/s; CPU service ${s.enrollServiceCpuSeconds} s, load generator ${s.enrollLoadGeneratorCpuSeconds} s)`);
  console.log("| request | count | p50 ms | p99 ms | max ms | deferred (429/503) | other 4xx | other 5xx | unanswered |");
  console.log("|---|---|---|---|---|---|---|---|---|");
  for (const kind of KINDS) {
    const f = s.requests[kind] as KindFigures | undefined;
    if (f) console.log(`| ${kind} | ${n(f.count)} | ${ms(f.p50)} | ${ms(f.p99)} | ${ms(f.max)} | ${f.deferred} | ${f.refused} | ${f.failed} | ${f.unanswered} |`);
  }
  const i = s.intake;
  console.log(`intake: heartbeats ${n(i.heartbeats.acknowledged)} acknowledged, ${n(i.heartbeats.written)} written; snapshots ${n(i.snapshots.acknowledged)} acknowledged, ${n(i.snapshots.stored)} stored, ${n(i.snapshots.stillOnDevices)} still on devices; ` +
    `log lines ${n(i.logLines.acknowledged)} acknowledged, ${n(i.logLines.stored)} stored, ${n(i.logLines.stillOnDevices)} still on devices`);
  console.log(`rollout: ${s.rollout.state}, ${n(s.rollout.running)} running, ${n(s.rollout.failed)} failed; completed ${s.rollout.completedAfterSeconds === null ? "not within the run" : `${s.rollout.completedAfterSeconds} s after the start`}; start request ${s.rollout.startRequestMs} ms`);
  console.log(`continuous deployment: ${n(s.continuous.joined)} joined, ${n(s.continuous.running)} running; alert evaluation: oldest ${s.alertEvaluationAgeMaxSeconds} s at worst (every ${ALERT_INTERVAL_S} s); ` +
    `retention dropped the expired day ${s.retentionDroppedExpiredDayAfterSeconds === null ? "not within the run" : `${s.retentionDroppedExpiredDayAfterSeconds} s after the start`}`);
  console.log(`service: CPU ${s.service.cpuPercentMean} % of a core on average, RSS ${s.service.rssMbAtMinute10 ?? "-"} MB at minute 10, max ${s.service.rssMbMax} MB, end ${s.service.rssMbEnd} MB (growth after minute 10: ${s.service.rssGrowthAfterMinute10Mb ?? "-"} MB); ` +
    `load generator CPU ${s.loadGenerator.cpuPercentMean} %, RSS max ${s.loadGenerator.rssMbMax} MB; PostgreSQL CPU ${Number.isNaN(s.postgres.cpuPercentMean) ? "-" : `${s.postgres.cpuPercentMean} %`}; ` +
    `database ${s.postgres.databaseMbStart} -> ${s.postgres.databaseMbEnd} MB (${s.postgres.growthMb >= 0 ? "+" : ""}${s.postgres.growthMb} MB; the expired day dropped is in it)`);
}

console.log(machineLine());
console.log(`settings: ${n(DEVICES)} devices (heartbeat and telemetry every 60 s, 1-3 log lines every ${LOG_SECONDS} s: ` +
  `${n(Math.round(DEVICES / 60 * 2 + DEVICES / LOG_SECONDS))} device requests/s; 1 %/min offline for ${OFFLINE_MINUTES} min), ${MINUTES} min after the enrollment, ${PEOPLE} people in the console`);
if (!process.env.BENCH_DB) process.env.BENCH_DB = "postgres";
await onEachDatabase(run);
process.exit(0);
