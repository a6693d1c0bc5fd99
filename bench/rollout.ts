// Benchmark: a staged rollout over 10,000 devices, from start to completed, with devices that
// report at once (no simulated download or install time), so that what is measured is the
// service's own work: dispatching batches, storing reports, judging batches and answering the
// desired state.
//
// What runs where: the service runs in this process (started like `npm start`, jobs off); the
// operator's moves (create, start) and the status reads go through REST on loopback; the agent
// side calls the deployments module's functions directly (src/modules/deployments/agent-state.ts):
// every simulated heartbeat is `recordDeploymentProgress` (when it carries a report) followed
// by `desiredDeploymentsOf`, which is what POST /agent/heartbeat does after its device-row
// statement. Not measured: HTTP, device JWT verification and the heartbeat's device-row
// statement (bench/heartbeat.ts measures those). Devices are inserted with one INSERT ... SELECT.
//
// A device learns it was dispatched when a heartbeat answers it: the driver finds dispatched
// devices with one query (standing in for heartbeats of devices whose answer is still empty)
// and hands them to `BENCH_CONCURRENCY` workers; each device then makes one heartbeat that
// reads the install, and one heartbeat per reported state (downloading, installing, running:
// BENCH_ROLLOUT_WALK=full, the default; `running`: only the final report).
//
// A 200-device warm-up rollout runs first, then `ANALYZE "DeploymentDevice"` (what autovacuum
// does on PostgreSQL after a small rollout), so the measured rollout meets realistic statistics.
// Figures and what they showed: docs/benchmarks.md ("Staged rollout").
//
//   npm run bench -- rollout
//   BENCH_ROLLOUT_DEVICES=10000 BENCH_CONCURRENCY=32 BENCH_ROLLOUT_WALK=full|running BENCH_DB=both|pglite|postgres
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { loadConfig } from "../src/config.js";
import { createLogger } from "../src/lib/logger.js";
import { startService, type RunningService } from "../src/server.js";
import { parseManifest, manifestDigest } from "../src/modules/applications/manifest/index.js";
import { ingestManifests } from "../src/modules/applications/ingest.js";
import { desiredDeploymentsOf, recordDeploymentProgress } from "../src/modules/deployments/agent-state.js";
import { JsonClient } from "../agent/src/core/json-client.js";
import { LatencyRecorder } from "../src/simulator/latency.js";
import { fmtMs, machineLine, percentiles } from "./support/machine.js";
import { onEachDatabase } from "./support/postgres.js";
import { benchServiceEnv } from "./support/service-env.js";

const DEVICES = Number(process.env.BENCH_ROLLOUT_DEVICES ?? 10_000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);
const WALK = (process.env.BENCH_ROLLOUT_WALK ?? "full") as "full" | "running";
const WARMUP_DEVICES = 200;
const ADMIN_KEY = "fm_bench" + "R".repeat(36);
const STEPS = WALK === "running" ? (["running"] as const) : (["downloading", "installing", "running"] as const);
const STRATEGY = {
  type: "staged",
  canary: { percent: 1 },
  batches: [{ percent: 10 }, { percent: 30 }, { percent: 100 }],
  successThreshold: 95,
  failureThreshold: 20,
  autoAdvance: true,
  batchTimeoutSeconds: 3600,
};

const MANIFEST = `apiVersion: fleet.app/v1alpha1
kind: ApplicationManifest
metadata:
  id: rollout-bench
  name: Rollout Bench
  version: 1.0.0
  catalog: { category: bench }
deploymentProfiles:
  - id: compose-main
    type: compose
    components:
      - name: gateway
        properties:
          repository: oci://registry.example/apps/gateway
          revision: 1.0.0
    requiredResources:
      cpu: { cores: 1, architectures: [arm64, amd64] }
parameters:
  pollSeconds:
    value: 30
    schema: { minimum: 5, maximum: 3600 }
    targets: [{ pointer: POLL_SECONDS, components: [gateway] }]
`;

interface RolloutFigures {
  database: string;
  devices: number;
  startRequestMs: number;
  toCompletedMs: number;
  toAllRunningMs: number;
  reports: number;
  reads: number;
  reportsPerSecond: number;
  heartbeatsPerSecond: number;
  reportLatency: ReturnType<LatencyRecorder["summary"]>;
  readLatency: ReturnType<LatencyRecorder["summary"]>;
  discoveryQueries: number;
  batches: Array<{ index: number; size: number; startedMs: number; completedMs: number | null }>;
  statusReads: Record<string, { p50: number; p99: number; n: number }>;
  finalProgress: Record<string, number>;
}

async function startInProcess(databaseUrl?: string): Promise<{ service: RunningService; dataDir: string }> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "fleet-bench-rollout-"));
  // No rollout job: every decision is taken by the reports themselves (docs/deployments.md).
  const config = loadConfig(benchServiceEnv({ dataDir, adminKey: ADMIN_KEY, databaseUrl }));
  return { service: await startService(config, createLogger("warn")), dataDir };
}

/** Runs one staged rollout over the devices labelled `rollout=<label>`; returns its figures. */
async function rollout(service: RunningService, client: JsonClient, applicationId: string, label: string, quiet: boolean) {
  const { services } = service;
  const raw = services.database.opened.raw;
  const api = async (method: string, p: string, body?: unknown) => {
    const res = await client.request<any>(method, p, body, { "x-api-key": ADMIN_KEY });
    if (res.status >= 300) throw new Error(`${method} ${p}: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body;
  };
  const created = await api("POST", "/api/v1/deployments", {
    name: `rollout-${label}`, applicationId, version: "1.0.0", profileId: "compose-main",
    parameters: { pollSeconds: 60 }, target: { labelSelector: { rollout: label } }, strategy: STRATEGY,
  });
  const id = created.id as string;
  const organizationId = created.organizationId as string;

  const reportLatency = new LatencyRecorder();
  const readLatency = new LatencyRecorder();
  let reports = 0;
  let discoveryQueries = 0;
  const handled = new Set<string>();
  const queue: string[] = [];
  let terminal = false;
  let lastReportAt = 0;

  const t0 = performance.now();
  const wall0 = Date.now();
  try {
    await api("POST", `/api/v1/deployments/${id}/start`);
  } catch (err) {
    throw new Error(`the start request failed after ${((performance.now() - t0) / 1000).toFixed(1)} s: ${(err as Error).message.slice(0, 300)}`);
  }
  const startRequestMs = performance.now() - t0;

  // Devices whose desired state now holds the install and that have not been served yet.
  let refilling: Promise<void> | null = null;
  const refill = () =>
    (refilling ??= (async () => {
      discoveryQueries++;
      const rows = await raw.query<{ deviceId: string; rolloutState: string }>(
        `SELECT dd."deviceId"::text AS "deviceId", d."rolloutState"
           FROM "Deployment" d LEFT JOIN "DeploymentDevice" dd
             ON dd."deploymentId" = d."id" AND dd."desiredAction" = 'install' AND dd."state" = 'pending'
          WHERE d."id" = $1::uuid`,
        [id],
      );
      for (const r of rows) if (r.deviceId && !handled.has(r.deviceId)) (handled.add(r.deviceId), queue.push(r.deviceId));
      terminal = ["completed", "failed", "aborted", "paused"].includes(rows[0]?.rolloutState ?? "");
    })().finally(() => (refilling = null)));

  const heartbeat = async (deviceId: string, state?: (typeof STEPS)[number]) => {
    const device = { id: deviceId, organizationId };
    if (state) {
      const r0 = performance.now();
      await recordDeploymentProgress(services, device, [{ deploymentId: id, state }]);
      reportLatency.record(performance.now() - r0);
      reports++;
      lastReportAt = performance.now();
    }
    const d0 = performance.now();
    const desired = await desiredDeploymentsOf(services, device);
    readLatency.record(performance.now() - d0);
    return desired;
  };

  const worker = async () => {
    for (;;) {
      const deviceId = queue.shift();
      if (deviceId === undefined) {
        if (terminal && queue.length === 0) {
          await refill(); // the last batch's stragglers (dispatched before the rollout completed)
          if (queue.length === 0) return;
          continue;
        }
        await refill();
        if (queue.length === 0) await new Promise((r) => setTimeout(r, 2));
        continue;
      }
      const desired = await heartbeat(deviceId);
      if (!desired.some((d) => d.deploymentId === id && d.action === "install")) throw new Error(`device ${deviceId} was not given the install`);
      for (const state of STEPS) await heartbeat(deviceId, state);
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  const toAllRunningMs = lastReportAt - t0;

  const row = await services.prisma.deployment.findUniqueOrThrow({ where: { id } });
  if (row.rolloutState !== "completed") throw new Error(`rollout ended ${row.rolloutState}: ${row.rolloutReason}`);
  const toCompletedMs = row.completedAt!.getTime() - wall0;
  const batches = (await services.prisma.deploymentBatch.findMany({ where: { deploymentId: id }, orderBy: { index: "asc" } })).map((b) => ({
    index: b.index, size: b.size,
    startedMs: b.startedAt ? b.startedAt.getTime() - wall0 : NaN,
    completedMs: b.completedAt ? b.completedAt.getTime() - wall0 : null,
  }));

  // What an operator's console polls during the rollout.
  const statusReads: RolloutFigures["statusReads"] = {};
  if (!quiet) {
    for (const [name, p] of [["GET /deployments/{id}", `/api/v1/deployments/${id}`], ["GET /deployments/{id}/rollout", `/api/v1/deployments/${id}/rollout`]] as const) {
      const samples: number[] = [];
      for (let i = 0; i < 23; i++) {
        const s0 = performance.now();
        await api("GET", p);
        if (i >= 3) samples.push(performance.now() - s0);
      }
      const q = percentiles(samples);
      statusReads[name] = { p50: q.p50, p99: q.p99, n: q.n };
    }
  }
  const final = await api("GET", `/api/v1/deployments/${id}`);
  const seconds = toAllRunningMs / 1000;
  return {
    startRequestMs, toCompletedMs, toAllRunningMs, reports, reads: readLatency.count,
    reportsPerSecond: reports / seconds, heartbeatsPerSecond: readLatency.count / seconds,
    reportLatency: reportLatency.summary(), readLatency: readLatency.summary(), discoveryQueries, batches, statusReads,
    finalProgress: Object.fromEntries(Object.entries(final.progress as Record<string, number>).filter(([, n]) => n > 0)),
  };
}

async function run(database: string, databaseUrl?: string): Promise<RolloutFigures | { database: string; failed: string }> {
  console.log(`\n== ${database}`);
  const { service, dataDir } = await startInProcess(databaseUrl);
  // The start request plans the whole device set in one transaction: let the service's own
  // transaction timeout decide, not the HTTP server's request timeouts.
  service.server.requestTimeout = 0;
  service.server.headersTimeout = 0;
  // ... and keep idle connections open across the pauses between phases (ANALYZE, warm-up).
  service.server.keepAliveTimeout = 600_000;
  // The start request freezes and plans the whole device set in one transaction: allow it time.
  const client = new JsonClient(service.url, 4, 600_000);
  try {
    const { services } = service;
    const raw = services.database.opened.raw;
    const [org] = await raw.query<{ id: string }>(`SELECT "id" FROM "Organization" WHERE "slug" = 'default'`);

    const parsed = parseManifest(MANIFEST, "apps/rollout-bench/1.0.0/app.yaml");
    if (parsed.kind !== "admitted") throw new Error(`bench manifest not admitted: ${JSON.stringify(parsed)}`);
    await services.prisma.$transaction((tx) =>
      ingestManifests(tx, org.id, { type: "git", registryId: crypto.randomUUID(), revision: "bench" }, [
        { path: parsed.path, manifest: parsed.manifest, warnings: parsed.warnings, digest: manifestDigest(MANIFEST), icon: null },
      ]),
    );
    const app = await services.prisma.application.findFirstOrThrow({ where: { organizationId: org.id, appKey: "rollout-bench" } });

    const i0 = performance.now();
    await raw.query(
      `INSERT INTO "Device" ("id", "organizationId", "name", "reportedDeviceId", "activeClaim", "status", "labels", "arch", "os", "lastSeenAt", "createdAt", "updatedAt")
       SELECT gen_random_uuid(), $1::uuid, 'rollout-' || i, 'rollout-' || i, 'rollout-' || i, 'online',
              jsonb_build_object('rollout', CASE WHEN i <= $3::int THEN 'warmup' ELSE 'bench' END, 'site', 'site-' || (i % 20)),
              (ARRAY['arm64', 'aarch64', 'x86_64'])[1 + (i % 3)], 'linux',
              now() AT TIME ZONE 'UTC', now() AT TIME ZONE 'UTC', now() AT TIME ZONE 'UTC'
         FROM generate_series(1, $2::int + $3::int) i`,
      [org.id, DEVICES, WARMUP_DEVICES],
    );
    await raw.exec(`ANALYZE "Device"`);
    console.log(`inserted ${DEVICES.toLocaleString("en")} devices (+${WARMUP_DEVICES} for a warm-up rollout) in ${((performance.now() - i0) / 1000).toFixed(1)} s`);

    // Warm-up: the same path over a few devices (JIT, Prisma's query plans, caches).
    const warm = await rollout(service, client, app.id, "warmup", true);
    console.log(`warm-up rollout over ${WARMUP_DEVICES} devices: completed in ${(warm.toCompletedMs / 1000).toFixed(2)} s`);
    await raw.exec(`ANALYZE "DeploymentDevice"`);

    let f: Awaited<ReturnType<typeof rollout>>;
    try {
      f = await rollout(service, client, app.id, "bench", false);
    } catch (err) {
      console.log(`FAILED: ${(err as Error).message}`);
      return { database, failed: (err as Error).message };
    }
    console.log(`start request (freeze ${DEVICES.toLocaleString("en")} devices, plan, dispatch the canary): ${fmtMs(f.startRequestMs)}`);
    for (const b of f.batches) {
      console.log(`  ${b.index === 0 ? "canary " : `batch ${b.index}`} ${String(b.size).padStart(5)} devices: started at ${(b.startedMs / 1000).toFixed(2)} s, ` +
        `succeeded at ${b.completedMs === null ? "-" : `${(b.completedMs / 1000).toFixed(2)} s`}`);
    }
    console.log(`start -> completed: ${(f.toCompletedMs / 1000).toFixed(2)} s; start -> last device running: ${(f.toAllRunningMs / 1000).toFixed(2)} s`);
    console.log(`reports: ${f.reports.toLocaleString("en")} (${STEPS.join(", ")} per device) at ${f.reportsPerSecond.toFixed(0)}/s; ` +
      `simulated heartbeats (report + desired state, or desired state alone): ${f.reads.toLocaleString("en")} at ${f.heartbeatsPerSecond.toFixed(0)}/s; ` +
      `${CONCURRENCY} concurrent devices; ${f.discoveryQueries} discovery queries`);
    console.log(`recordDeploymentProgress p50 ${fmtMs(f.reportLatency.p50)}, p90 ${fmtMs(f.reportLatency.p90)}, p99 ${fmtMs(f.reportLatency.p99)}, max ${fmtMs(f.reportLatency.max)}; ` +
      `desiredDeploymentsOf p50 ${fmtMs(f.readLatency.p50)}, p99 ${fmtMs(f.readLatency.p99)}`);
    for (const [name, q] of Object.entries(f.statusReads)) console.log(`${name.padEnd(30)} p50 ${fmtMs(q.p50)}, p99 ${fmtMs(q.p99)} (n=${q.n}, ${DEVICES.toLocaleString("en")} devices)`);
    console.log(`final progress: ${JSON.stringify(f.finalProgress)}`);
    return { database, devices: DEVICES, ...f };
  } finally {
    client.close();
    // A statement still running in the database (a failed start) may hold the stop up: bounded.
    await Promise.race([service.stop(), new Promise((r) => setTimeout(r, 30_000))]);
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

console.log(machineLine());
console.log(`settings: ${DEVICES.toLocaleString("en")} devices, staged (canary 1 %, batches 10 % / 30 % / rest, successThreshold 95, autoAdvance), ` +
  `reports ${STEPS.join(" -> ")} at once, ${CONCURRENCY} devices concurrently; agent side in-process (see the header of bench/rollout.ts)`);
const results: Array<RolloutFigures | { database: string; failed: string }> = [];
results.push(...(await onEachDatabase(run)));
console.log(`\nload average at the end ${os.loadavg().map((l) => l.toFixed(1)).join(" / ")}`);
console.log("summary (JSON):");
console.log(JSON.stringify(results.map((r) => ("failed" in r ? r : {
  database: r.database,
  devices: r.devices,
  startRequestMs: +r.startRequestMs.toFixed(1),
  startToCompletedSeconds: +(r.toCompletedMs / 1000).toFixed(2),
  startToAllRunningSeconds: +(r.toAllRunningMs / 1000).toFixed(2),
  reportsPerSecond: Math.round(r.reportsPerSecond),
  heartbeatsPerSecond: Math.round(r.heartbeatsPerSecond),
  reportP50Ms: +r.reportLatency.p50.toFixed(2),
  reportP99Ms: +r.reportLatency.p99.toFixed(2),
  batches: r.batches.map((b) => ({ size: b.size, startedS: +(b.startedMs / 1000).toFixed(2), succeededS: b.completedMs === null ? null : +(b.completedMs / 1000).toFixed(2) })),
})), null, 2));
process.exit(results.some((r) => "failed" in r) ? 1 : 0);
