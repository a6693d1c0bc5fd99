// Benchmark: a continuous deployment over 10,000 devices where 1,000 devices change labels at
// once. Measured: the one UPDATE statement that changes their labels (the membership trigger on
// "Device" runs inside it: docs/deployments.md, "Continuous targets"), and the time from that
// statement until every joiner's heartbeat answers the install (desiredDeploymentsOf, the
// heartbeat's desired-state read, for each joiner with 32 at a time). Statements the label
// change issues: one, by construction; the benchmark checks every joiner got its entry.
//
//   npm run bench -- continuous
//   BENCH_CONTINUOUS_DEVICES=10000 BENCH_CONTINUOUS_JOINERS=1000 BENCH_DB=both|pglite|postgres
import { desiredDeploymentsOf } from "../src/modules/deployments/agent-state.js";
import { openDeploymentBench } from "./support/deployment-bench.js";
import { fmtMs, machineLine } from "./support/machine.js";
import { onEachDatabase } from "./support/postgres.js";

const DEVICES = Number(process.env.BENCH_CONTINUOUS_DEVICES ?? 10_000);
const JOINERS = Number(process.env.BENCH_CONTINUOUS_JOINERS ?? 1_000);
const CONCURRENCY = 32;

async function run(database: string, databaseUrl?: string) {
  console.log(`\n== ${database}`);
  const bench = await openDeploymentBench("continuous-bench", databaseUrl);
  try {
    const { services, raw, org, app, api } = bench;
    // DEVICES - JOINERS devices match the selector now; JOINERS devices will start matching.
    await bench.insertDevices("cont", DEVICES, `jsonb_build_object('pool', CASE WHEN i <= $4::int THEN 'later' ELSE 'now' END, 'site', 'site-' || (i % 50))`, [JOINERS]);
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
    await bench.close();
  }
}

console.log(machineLine());
console.log(`settings: ${DEVICES.toLocaleString("en")} devices in 50 sites, a continuous all-at-once deployment, ${JOINERS.toLocaleString("en")} devices start matching in one UPDATE`);
await onEachDatabase(run);
