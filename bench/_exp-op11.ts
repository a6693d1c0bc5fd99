import http from "node:http";
import { withMigratedPostgres } from "./support/postgres.js";
import { startChild } from "./support/child.js";
import { insertSnapshots } from "../src/modules/telemetry/ingest.js";
import { percentiles } from "./support/machine.js";
const ADMIN_KEY = "fm_bench" + "S".repeat(36);
const DAY = 86400_000;
const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
function get(url: string): Promise<{ status: number; len: number }> {
  return new Promise((resolve, reject) => {
    http.get(url, { agent, headers: { "x-api-key": ADMIN_KEY } }, (res) => {
      let len = 0; res.on("data", (c) => (len += c.length)); res.on("end", () => resolve({ status: res.statusCode ?? 0, len }));
    }).on("error", reject);
  });
}
await withMigratedPostgres("exp_op11", 6, async (db, url) => {
  const raw = db.raw;
  const svc = await startChild("serve.ts", { BENCH_DATABASE: url, BENCH_ADMIN_KEY: ADMIN_KEY, BENCH_FLEET: "10", BENCH_JOBS: "0", BENCH_PROFILE: "/tmp/prof" });
  try {
    const [org] = await raw.query<{ id: string }>(`SELECT "id" FROM "Organization" WHERE "slug" = 'default'`);
    const [dev] = await raw.query<{ id: string }>(`SELECT "id" FROM "Device" LIMIT 1`);
    const end = Date.now() - 2 * 3600_000; const n = Math.floor(Number(process.env.DAYS ?? 40) * DAY / 15000);
    for (let first = 0; first < n; first += 1000) {
      const batch = [];
      for (let i = first; i < Math.min(first + 1000, n); i++) batch.push({ timestamp: new Date(end - (n - i) * 15000).toISOString(), cpuUsagePercent: (i * 37) % 100, memoryUsedBytes: 1e9 + (i % 1000) * 1e6, memoryTotalBytes: 4e9, diskUsedBytes: 5e10, diskTotalBytes: 1e11, uptimeSeconds: i * 15, restartCount: 0, containersRunning: 3, containersFailed: 0, errorCount: i % 7 } as any);
      await insertSnapshots(raw, { id: dev.id, organizationId: org.id }, batch, { retentionDays: 30 });
    }
    await raw.exec("VACUUM ANALYZE");
    const u = `${svc.info.url}/api/v1/devices/${dev.id}/telemetry?from=${new Date(end - 30 * DAY).toISOString()}&to=${new Date(end).toISOString()}&interval=1h`;
    for (let i = 0; i < 30; i++) await get(u);
    const runs = Number(process.env.RUNS ?? 200);
    if (process.env.PROF) svc.process.kill("SIGUSR2");
    const s: number[] = []; let len = 0;
    for (let i = 0; i < runs; i++) { const t = performance.now(); const r = await get(u); len = r.len; s.push(performance.now() - t); }
    if (process.env.PROF) { svc.process.kill("SIGUSR2"); await new Promise((r) => setTimeout(r, 1500)); }
    const p = percentiles(s);
    console.log(`op11 30d@1h: p50 ${p.p50.toFixed(2)} p99 ${p.p99.toFixed(2)} bytes ${len}`);
  } finally { await svc.stop(); }
});
process.exitCode = 0;
