// Benchmark: a continuous deployment over 10,000 devices where 1,000 devices change labels at
// once. Measured: the one UPDATE statement that changes their labels (the membership trigger on
// "Device" runs inside it: docs/deployments.md, "Continuous targets"), and the time from that
// statement until every joiner's heartbeat answers the install (desiredDeploymentsOf, the
// heartbeat's desired-state read, for each joiner with 32 at a time). Statements the label
// change issues: one, by construction; the benchmark checks every joiner got its entry.
//
//   npm run bench -- continuous
//   BENCH_CONTINUOUS_DEVICES=10000 BENCH_CONTINUOUS_JOINERS=1000 BENCH_DB=both|pglite|postgres
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { loadConfig } from "../src/config.js";
import { createLogger } from "../src/lib/logger.js";
import { startService } from "../src/server.js";
import { parseManifest, manifestDigest } from "../src/modules/applications/manifest/index.js";
import { ingestManifests } from "../src/modules/applications/ingest.js";
import { desiredDeploymentsOf } from "../src/modules/deployments/agent-state.js";
import { JsonClient } from "../src/simulator/http-client.js";
import { fmtMs, machineLine } from "./support/machine.js";
import { onEachDatabase } from "./support/postgres.js";
import { benchServiceEnv } from "./support/service-env.js";

const DEVICES = Number(process.env.BENCH_CONTINUOUS_DEVICES ?? 10_000);
const JOINERS = Number(process.env.BENCH_CONTINUOUS_JOINERS ?? 1_000);
const CONCURRENCY = 32;
const ADMIN_KEY = "fm_bench" + "C".repeat(36);
const MANIFEST = `apiVersion: fleet.app/v1alpha1
kind: ApplicationManifest
metadata:
  id: continuous-bench
  name: Continuous Bench
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
parameters: {}
`;

async function run(database: string, databaseUrl?: string) {
  console.log(`\n== ${database}`);
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "fleet-bench-continuous-"));
  const service = await startService(loadConfig(benchServiceEnv({ dataDir, adminKey: ADMIN_KEY, databaseUrl })), createLogger("warn"));
  const client = new JsonClient(service.url, 4, 600_000);
  try {
    const { services } = service;
    const raw = services.database.opened.raw;
    const [org] = await raw.query<{ id: string }>(`SELECT "id" FROM "Organization" WHERE "slug" = 'default'`);
    const parsed = parseManifest(MANIFEST, "apps/continuous-bench/1.0.0/app.yaml");
    if (parsed.kind !== "admitted") throw new Error("bench manifest not admitted");
    await services.prisma.$transaction((tx) =>
      ingestManifests(tx, org.id, { type: "git", registryId: crypto.randomUUID(), revision: "bench" }, [
        { path: parsed.path, manifest: parsed.manifest, warnings: parsed.warnings, digest: manifestDigest(MANIFEST), icon: null },
      ]),
    );
    const app = await services.prisma.application.findFirstOrThrow({ where: { organizationId: org.id, appKey: "continuous-bench" } });
    // DEVICES - JOINERS devices match the selector now; JOINERS devices will start matching.
    await raw.query(
      `INSERT INTO "Device" ("id", "organizationId", "name", "reportedDeviceId", "activeClaim", "status", "labels", "arch", "os", "lastSeenAt", "createdAt", "updatedAt")
       SELECT gen_random_uuid(), $1::uuid, 'cont-' || i, 'cont-' || i, 'cont-' || i, 'online',
              jsonb_build_object('pool', CASE WHEN i <= $3::int THEN 'later' ELSE 'now' END, 'site', 'site-' || (i % 50)),
              'arm64', 'linux', now() AT TIME ZONE 'UTC', now() AT TIME ZONE 'UTC', now() AT TIME ZONE 'UTC'
         FROM generate_series(1, $2::int) i`,
      [org.id, DEVICES, JOINERS],
    );
    await raw.exec(`ANALYZE "Device"`);
    const api = async (method: string, p: string, body?: unknown) => {
      const res = await client.request<any>(method, p, body, { "x-api-key": ADMIN_KEY });
      if (res.status >= 300) throw new Error(`${method} ${p}: ${res.status} ${JSON.stringify(res.body)}`);
      return res.body;
    };
    const created = await api("POST", "/api/v1/deployments", {
      name: "continuous-bench", applicationId: app.id, version: "1.0.0", profileId: "compose-main",
      target: { labelSelector: { pool: "now" } }, continuous: true,
    });
    const s0 = performance.now();
    await api("POST", `/api/v1/deployments/${created.id}/start`);
    console.log(`start over ${(DEVICES - JOINERS).toLocaleString("en")} matching devices: ${fmtMs(performance.now() - s0)}`);

    const t0 = performance.now();
    const changed = await raw.query<{ id: string }>(`UPDATE "Device" SET "labels" = "labels" || '{"pool":"now"}'::jsonb WHERE "labels" @> '{"pool":"later"}'::jsonb RETURNING "id"::text AS "id"`);
    const statementMs = performance.now() - t0;
    const [{ n }] = await raw.query<{ n: number }>(
      `SELECT count(*)::int AS "n" FROM "DeploymentDevice" WHERE "deploymentId" = $1::uuid AND "lateJoiner" AND "desiredAction" = 'install'`, [created.id]);
    if (n !== changed.length) throw new Error(`${changed.length} devices changed labels but ${n} joiners have an install entry`);
    const queue = changed.map((r) => r.id);
    let missing = 0;
    await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
      for (let id = queue.shift(); id; id = queue.shift()) {
        const desired = await desiredDeploymentsOf(services, { id, organizationId: org.id });
        if (!desired.some((d) => d.deploymentId === created.id && d.action === "install")) missing++;
      }
    }));
    const allServedMs = performance.now() - t0;
    if (missing) throw new Error(`${missing} joiners were not told to install`);
    console.log(`label change of ${changed.length.toLocaleString("en")} devices (1 statement, membership trigger inside): ${fmtMs(statementMs)}`);
    console.log(`label change -> every joiner's desired state answered the install (${CONCURRENCY} heartbeats at a time): ${fmtMs(allServedMs)}`);
    return { database, statementMs, allServedMs };
  } finally {
    client.close();
    await Promise.race([service.stop(), new Promise((r) => setTimeout(r, 30_000))]);
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

console.log(machineLine());
console.log(`settings: ${DEVICES.toLocaleString("en")} devices in 50 sites, a continuous all-at-once deployment, ${JOINERS.toLocaleString("en")} devices start matching in one UPDATE`);
await onEachDatabase(run);
