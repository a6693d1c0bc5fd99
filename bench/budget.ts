// Benchmark: a rollout paced by a disruption budget over 10,000 devices in 50 sites (200 per
// site, at most BENCH_BUDGET_PER_SITE of a site between being told to install and running).
// The agents are driven in process: every device told to install reports `running` through
// recordDeploymentProgress (what a heartbeat's report does: store it, then judge the deployment
// under its row lock, which admits the next held devices), 32 at a time. Measured: the total
// time from start to the last device running, the rounds, and the time per report. The budget
// is checked from the stored device states by a sampler beside the agents (every 20 ms) and
// after every round: the most devices of one site ever seen in flight.
//
//   npm run bench -- budget
//   BENCH_BUDGET_DEVICES=10000 BENCH_BUDGET_PER_SITE=10 BENCH_DB=both|pglite|postgres
import { recordDeploymentProgress } from "../src/modules/deployments/agent-state.js";
import { openDeploymentBench } from "./support/deployment-bench.js";
import { fmtMs, machineLine, percentiles } from "./support/machine.js";
import { onEachDatabase } from "./support/postgres.js";

const DEVICES = Number(process.env.BENCH_BUDGET_DEVICES ?? 10_000);
const SITES = 50;
const PER_SITE = Number(process.env.BENCH_BUDGET_PER_SITE ?? 10);
const CONCURRENCY = 32;

async function run(database: string, databaseUrl?: string) {
  console.log(`\n== ${database}`);
  const bench = await openDeploymentBench("budget-bench", databaseUrl);
  try {
    const { services, raw, org, app, api } = bench;
    await bench.insertDevices("paced", DEVICES, `jsonb_build_object('ring', 'paced', 'site', 'site-' || (i % ${SITES}))`);
    const created = await api("POST", "/api/v1/deployments", {
      name: "budget-bench", applicationId: app.id, version: "1.0.0", profileId: "compose-main",
      target: { labelSelector: { ring: "paced" } }, disruptionBudget: { groupBy: ["site"], maxUnavailable: { count: PER_SITE } },
    });
    const id: string = created.id;
    const busiestSite = async () => {
      const [row] = await raw.query<{ n: number }>(
        `SELECT COALESCE(max(n), 0)::int AS "n" FROM (SELECT count(*) AS n FROM "DeploymentDevice" dd JOIN "Device" d ON d."id" = dd."deviceId"
          WHERE dd."deploymentId" = $1::uuid AND dd."desiredAction" = 'install' AND dd."state" IN ('pending', 'downloading', 'installing')
          GROUP BY d."labels" ->> 'site') s`, [id]);
      return row.n;
    };
    let peak = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        peak = Math.max(peak, await busiestSite());
        await new Promise((r) => setTimeout(r, 20));
      }
    })();

    const t0 = performance.now();
    await api("POST", `/api/v1/deployments/${id}/start`);
    const startMs = performance.now() - t0;
    const reportMs: number[] = [];
    let rounds = 0;
    for (;;) {
      const told = await raw.query<{ id: string }>(
        `SELECT "deviceId"::text AS "id" FROM "DeploymentDevice" WHERE "deploymentId" = $1::uuid AND "desiredAction" = 'install' AND "state" = 'pending'`, [id]);
      if (!told.length) break;
      rounds++;
      const queue = told.map((r) => r.id);
      await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
        for (let deviceId = queue.shift(); deviceId; deviceId = queue.shift()) {
          const r0 = performance.now();
          await recordDeploymentProgress(services, { id: deviceId, organizationId: org.id }, [{ deploymentId: id, state: "running" }]);
          reportMs.push(performance.now() - r0);
        }
      }));
      peak = Math.max(peak, await busiestSite());
    }
    const totalMs = performance.now() - t0;
    sampling = false;
    await sampler;
    const d = await api("GET", `/api/v1/deployments/${id}`);
    if (d.progress.running !== DEVICES) throw new Error(`${d.progress.running} of ${DEVICES} devices running (${JSON.stringify(d.progress)})`);
    if (peak > PER_SITE) throw new Error(`the budget was exceeded: ${peak} devices of one site in flight (budget ${PER_SITE})`);
    const p = percentiles(reportMs);
    console.log(`start (all held, ${SITES * PER_SITE} admitted): ${fmtMs(startMs)}`);
    console.log(`start -> all ${DEVICES.toLocaleString("en")} running: ${fmtMs(totalMs)} in ${rounds} rounds; rollout ${d.rolloutState}`);
    console.log(`report running (store + judge + admit, ${CONCURRENCY} at a time): p50 ${fmtMs(p.p50)}, p99 ${fmtMs(p.p99)}`);
    console.log(`busiest site in flight, sampled from the stored states: ${peak} (budget ${PER_SITE}): never exceeded`);
    return { database, totalMs, rounds, peak };
  } finally {
    await bench.close();
  }
}

console.log(machineLine());
console.log(`settings: ${DEVICES.toLocaleString("en")} devices in ${SITES} sites, all-at-once, disruptionBudget { groupBy: [site], maxUnavailable: { count: ${PER_SITE} } }`);
await onEachDatabase(run);
