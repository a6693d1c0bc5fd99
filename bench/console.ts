// Benchmark: the web console's budgets (/work/shared/design/console.md, "Budgets"), measured in
// Debian's Chromium (headless, 1280x800) with the page's own performance API, on a service with
// BENCH_FLEET devices (default 100,000, bulk-inserted by bench/support/serve.ts), side by side
// with the API calls alone, so that the console's own cost is visible:
//   * initial JavaScript, gzip: the entry chunk and its preloads (what index.html loads), and
//     every script the overview loaded (its lazy route chunks included). Budget 250 kB.
//   * the overview interactive: from navigation start until no card is loading any more (no
//     spinner, skeleton or aria-busy; the donut shows the fleet's total), a fresh context each
//     run (cold cache, signed-in cookie). Budget 1.5 s. Beside it: the slowest API answer the
//     page waited for (resource timing) and the same REST calls from Node.
//   * a 50-row page of the device table: from the end of the device list's response to the
//     first frame with its 50 rows in the DOM (a MutationObserver stamps the time; then one
//     requestAnimationFrame), for the first page, "Next page" and a sort by name. Budget 300 ms.
//   * a 10,000-point telemetry chart: one device with 10,000 one-minute snapshots (sent over
//     the agent protocol), its custom range of 10,000 minutes at 1 minute: from the end of the
//     series response to the last canvas stroke of the three charts (3 x 10,000 points).
//     Budget 200 ms.
// Runs on PGlite (BENCH_DB=pglite, the default here) or PostgreSQL too (BENCH_DB=both|postgres).
// Prints figures; asserts nothing.
//
//   npm run bench -- console
//   BENCH_FLEET=100000 BENCH_CONSOLE_RUNS=5 BENCH_DB=pglite|both|postgres
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import zlib from "node:zlib";
import { fileURLToPath } from "node:url";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { FleetSimulator } from "../src/simulator/engine.js";
import { JsonClient } from "../agent/src/core/json-client.js";
import { launchBrowser } from "../test/support/chromium.js";
import { fmtMs, machineLine, percentiles } from "./support/machine.js";
import { onEachDatabase } from "./support/postgres.js";
import { startChild } from "./support/child.js";

const FLEET = Number(process.env.BENCH_FLEET ?? 100_000);
const RUNS = Number(process.env.BENCH_CONSOLE_RUNS ?? 5);
const TRACE = process.env.BENCH_CONSOLE_TRACE === "1";
const PROFILE_DIR = process.env.BENCH_CONSOLE_PROFILE;
const POINTS = 10_000;
const ADMIN_KEY = "fm_bench" + "W".repeat(36);
const ADMIN = { email: "admin@example.com", password: "bench-password-123" };
const DIST = path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "web", "dist");
const kB = (bytes: number) => `${(bytes / 1000).toFixed(1)} kB`;
const gzipSize = (file: string) => zlib.gzipSync(fs.readFileSync(file), { level: 9 }).length;

// In every page, before its scripts: stamps (performance.now()) for when the overview first
// stops loading, when a table first holds 50 device rows after a reset, and every canvas stroke.
// (Playwright adds it through the DevTools protocol: the page's CSP does not apply.)
const PROBE = `(() => {
  const w = window;
  w.__bench = { overviewReady: null, rows50: [], strokes: [] };
  const stroke = CanvasRenderingContext2D.prototype.stroke;
  CanvasRenderingContext2D.prototype.stroke = function (...args) { w.__bench.strokes.push(performance.now()); return stroke.apply(this, args); };
  let lastFirstRow = null;
  const check = () => {
    const b = w.__bench;
    if (b.overviewReady === null && location.pathname === "/" && document.querySelector(".donut__center")
        && !document.querySelector('.spinner, .skeleton, [aria-busy="true"]')) b.overviewReady = performance.now();
    // The device table: the table whose caption is "Devices"; a new page is a new first row.
    const table = [...document.querySelectorAll("table")].find((t) => t.querySelector("caption")?.textContent?.trim() === "Devices");
    const rows = table ? table.querySelectorAll("tbody tr") : [];
    const first = rows[0]?.textContent ?? null;
    if (rows.length === 50 && first !== lastFirstRow) { lastFirstRow = first; b.rows50.push(performance.now()); }
  };
  new MutationObserver(check).observe(document, { subtree: true, childList: true, attributes: true, characterData: true });
})();`;

interface BenchWindow { __bench: { overviewReady: number | null; rows50: number[]; strokes: number[] } }
const probe = (page: Page) => page.evaluate(() => (globalThis as unknown as BenchWindow).__bench);
/** responseEnd of the last resource whose URL contains `part` (performance API, page time) */
const responseEnd = (page: Page, part: string) => page.evaluate((p) => {
  const g = globalThis as unknown as { performance: { getEntriesByType(t: string): { name: string; responseEnd: number; startTime: number }[] } };
  const hits = g.performance.getEntriesByType("resource").filter((e) => e.name.includes(p));
  const last = hits.at(-1);
  return last ? { start: last.startTime, end: last.responseEnd } : null;
}, part);

async function signedInContext(browser: Browser, url: string): Promise<BrowserContext> {
  const context = await browser.newContext({ baseURL: url, viewport: { width: 1280, height: 800 }, locale: "en-US", timezoneId: "UTC" });
  await context.addInitScript(PROBE);
  const res = await context.request.post(`${url}/api/v1/auth/session`, { data: ADMIN, headers: { origin: url } });
  if (res.status() !== 200) throw new Error(`sign-in: ${res.status()} ${await res.text()}`);
  return context;
}

async function waitFor<T>(page: Page, read: () => Promise<T | null | undefined | false>, what: string, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what} at ${page.url()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** One REST call from Node, timed (ms). */
async function timed(client: JsonClient, p: string): Promise<number> {
  const started = performance.now();
  const res = await client.request("GET", p, undefined, { "x-api-key": ADMIN_KEY });
  if (res.status !== 200) throw new Error(`GET ${p}: ${res.status}`);
  return performance.now() - started;
}

function bundleSizes() {
  const html = fs.readFileSync(path.join(DIST, "index.html"), "utf8");
  const entry = [...html.matchAll(/(?:src|href)="\/?(assets\/[^"]+\.js)"/g)].map((m) => m[1]);
  const all = fs.readdirSync(path.join(DIST, "assets")).filter((f) => f.endsWith(".js"));
  return {
    entry: entry.reduce((sum, f) => sum + gzipSize(path.join(DIST, f)), 0),
    entryFiles: entry.length,
    all: all.reduce((sum, f) => sum + gzipSize(path.join(DIST, "assets", f)), 0),
    allFiles: all.length,
  };
}

/** Gives one device POINTS one-minute snapshots over the agent protocol; answers its id and the range. */
async function deviceWithHistory(url: string) {
  const api = new JsonClient(url);
  const as = { "x-api-key": ADMIN_KEY };
  const ca = await api.request("POST", "/api/v1/ca-certificates/generate", { name: "bench CA", commonName: "bench CA" }, as);
  if (ca.status !== 201) throw new Error(`CA: ${ca.status} ${JSON.stringify(ca.body).slice(0, 300)}`);
  const token = await api.request<{ token: string }>("POST", "/api/v1/enrollment-tokens", { name: "bench chart", maxUses: 1 }, as);
  if (token.status !== 201) throw new Error(`token: ${token.status}`);
  const simulator = new FleetSimulator({ url, enrollmentToken: token.body.token, devices: 1, heartbeatMs: 3_600_000, telemetryMs: 0, failureRate: 0, idPrefix: "chart" });
  await simulator.enrollAll();
  const device = simulator.devices[0];
  await device.heartbeat(true);
  const to = Math.floor(Date.now() / 60_000) * 60_000;
  const from = to - (POINTS - 1) * 60_000;
  const sent = await device.sendTelemetryHistory(from, 60_000, to);
  if (sent.status >= 300) throw new Error(`telemetry: ${sent.status} ${JSON.stringify(sent.body).slice(0, 300)}`);
  await simulator.stop();
  // Both ends inclusive: 10,000 buckets of a minute.
  return { deviceId: device.deviceId!, from: new Date(from).toISOString(), to: new Date(to).toISOString() };
}

const line = (name: string, samples: number[], budget?: number) => {
  const p = percentiles(samples);
  return `${name.padEnd(46)} p50 ${fmtMs(p.p50).padStart(9)}  max ${fmtMs(Math.max(...samples)).padStart(9)}  (n=${p.n})${budget ? `  budget ${budget} ms` : ""}`;
};

async function run(label: string, databaseUrl?: string) {
  console.log(`\n== ${label}`);
  const service = await startChild("serve.ts", { BENCH_ADMIN_KEY: ADMIN_KEY, BENCH_FLEET: String(FLEET), ...(databaseUrl ? { BENCH_DATABASE: databaseUrl } : {}) });
  const url = service.info.url as string;
  console.log(`${FLEET.toLocaleString("en")} devices inserted in ${Number(service.info.fleetSeconds).toFixed(1)} s`);
  const browser = await launchBrowser();
  const api = new JsonClient(url);
  try {
    const chart = await deviceWithHistory(url);

    // The overview, cold, RUNS times.
    const overview: number[] = [];
    const overviewApi: number[] = [];
    const overviewJs: number[] = [];
    let loadedScripts = 0;
    for (let i = 0; i < RUNS; i++) {
      const context = await signedInContext(browser, url);
      const page = await context.newPage();
      await page.goto("/");
      const ready = await waitFor(page, async () => (await probe(page)).overviewReady, "the overview");
      const timing = await page.evaluate(() => {
        const g = globalThis as unknown as { performance: { getEntriesByType(t: string): { name: string; responseEnd: number; startTime: number; initiatorType: string; encodedBodySize: number }[] } };
        const entries = g.performance.getEntriesByType("resource");
        const trpc = entries.filter((e) => e.name.includes("/trpc/"));
        const scripts = entries.filter((e) => e.name.endsWith(".js"));
        return {
          slowestApi: Math.max(0, ...trpc.map((e) => e.responseEnd - e.startTime)),
          scripts: scripts.map((e) => new URL(e.name).pathname),
          scriptsEnd: Math.max(0, ...scripts.map((e) => e.responseEnd)),
          timeline: entries.map((e) => ({ path: new URL(e.name).pathname + new URL(e.name).search.slice(0, 60), start: e.startTime, end: e.responseEnd })),
        };
      });
      // BENCH_CONSOLE_TRACE=1: where the first run's time went, request by request.
      if (TRACE && i === 0) for (const e of timing.timeline) console.log(`  ${e.start.toFixed(0).padStart(6)} -> ${e.end.toFixed(0).padStart(6)} ms  ${e.path}`);
      overview.push(ready);
      overviewApi.push(timing.slowestApi);
      overviewJs.push(timing.scriptsEnd);
      if (i === 0) loadedScripts = timing.scripts.reduce((sum, p) => sum + gzipSize(path.join(DIST, p)), 0);
      await context.close();
    }
    const restOverview: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      const started = performance.now();
      await Promise.all(["/api/v1/groups/stats", "/api/v1/fleet/health", "/api/v1/groups/by-label/site"].map((p) => timed(api, p)));
      restOverview.push(performance.now() - started);
    }

    // The device table: first page, next page, sort by name; from the list's response to 50 rows.
    const context = await signedInContext(browser, url);
    const page = await context.newPage();
    const tableFirst: number[] = [];
    const tableNext: number[] = [];
    const tableSort: number[] = [];
    const rowsAfter = async (count: number, part: string) => {
      const stamp = await waitFor(page, async () => { const b = await probe(page); return b.rows50.length >= count ? b.rows50[count - 1] : null; }, "50 rows");
      const res = await waitFor(page, () => responseEnd(page, part), "the device list's response");
      return stamp - res.end;
    };
    for (let i = 0; i < RUNS; i++) {
      await page.goto("/devices?limit=50");
      tableFirst.push(await rowsAfter(1, "devices.list"));
      await page.evaluate(() => (globalThis as unknown as { performance: { clearResourceTimings(): void } }).performance.clearResourceTimings());
      await page.getByRole("button", { name: "Next page" }).first().click();
      tableNext.push(await rowsAfter(2, "devices.list"));
      await page.evaluate(() => (globalThis as unknown as { performance: { clearResourceTimings(): void } }).performance.clearResourceTimings());
      await page.goto(`/devices?limit=50&sort=name&order=${i % 2 ? "asc" : "desc"}`);
      tableSort.push(await rowsAfter(1, "devices.list"));
    }
    await context.close();
    const restTable: number[] = [];
    for (let i = 0; i < RUNS; i++) restTable.push(await timed(api, `/api/v1/devices?limit=50&offset=${50 * i}`));

    // The telemetry charts: 10,000 one-minute buckets each.
    const chartDraw: number[] = [];
    const chartFirst: number[] = [];
    const chartApi: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      const ctx = await signedInContext(browser, url);
      const p = await ctx.newPage();
      // BENCH_CONSOLE_PROFILE=<dir>: the first chart run's CPU profile of the page (DevTools format).
      const cdp = PROFILE_DIR && i === 0 ? await ctx.newCDPSession(p) : null;
      if (cdp) await cdp.send("Profiler.enable").then(() => cdp.send("Profiler.setSamplingInterval", { interval: 100 })).then(() => cdp.send("Profiler.start"));
      await p.goto(`/devices/${chart.deviceId}?tab=telemetry&range=custom&from=${chart.from}&to=${chart.to}&interval=1m`);
      await p.locator(".telemetry-footnote").waitFor({ timeout: 60_000 }).catch(async (err: Error) => {
        const shot = path.join(os.tmpdir(), "bench-console-chart.png");
        await p.screenshot({ path: shot, fullPage: true });
        throw new Error(`the chart did not appear (the page: ${shot}): ${err.message.split("\n")[0]}`);
      });
      const footnote = (await p.locator(".telemetry-footnote").textContent()) ?? "";
      if (!footnote.startsWith(`${POINTS.toLocaleString("en")} snapshots in ${POINTS.toLocaleString("en")} buckets`)) throw new Error(`the chart shows: ${footnote}`);
      // Strokes settle once the three charts are drawn (and redrawn at their measured width).
      let strokes = -1;
      for (;;) {
        await new Promise((r) => setTimeout(r, 300));
        const now = (await probe(p)).strokes.length;
        if (now === strokes) break;
        strokes = now;
      }
      if (cdp) {
        const { profile } = await cdp.send("Profiler.stop");
        fs.mkdirSync(PROFILE_DIR!, { recursive: true });
        const file = path.join(PROFILE_DIR!, "console-chart.cpuprofile");
        fs.writeFileSync(file, JSON.stringify(profile));
        console.log(`chart page CPU profile: ${file} (npx tsx bench/support/profile-summary.ts ${file})`);
      }
      const res = (await responseEnd(p, "telemetry.series"))!;
      const b = await probe(p);
      const after = b.strokes.filter((t) => t >= res.end);
      chartFirst.push(Math.min(...after) - res.end);
      chartDraw.push(Math.max(...after) - res.end);
      chartApi.push(res.end - res.start);
      await ctx.close();
    }
    const restChart: number[] = [];
    for (let i = 0; i < RUNS; i++) restChart.push(await timed(api, `/api/v1/devices/${chart.deviceId}/telemetry?from=${chart.from}&to=${chart.to}&interval=1m`));

    console.log(`overview loaded ${kB(loadedScripts)} of JavaScript (gzip, level 9)`);
    console.log(line("overview interactive (navigation start)", overview, 1500));
    console.log(line("  of which: scripts loaded", overviewJs));
    console.log(line("  of which: slowest API answer in the page", overviewApi));
    console.log(line("  the same three REST calls from Node", restOverview));
    console.log(line("device table, first page: data -> 50 rows", tableFirst, 300));
    console.log(line("device table, next page: data -> 50 rows", tableNext, 300));
    console.log(line("device table, sorted by name: data -> 50 rows", tableSort, 300));
    console.log(line("  GET /api/v1/devices?limit=50 from Node", restTable));
    console.log(line(`telemetry, 3 charts x ${POINTS.toLocaleString("en")} points: data -> drawn`, chartDraw, 200));
    console.log(line("  of which: data -> first stroke", chartFirst));
    console.log(line("  the series call in the page", chartApi));
    console.log(line("  GET .../telemetry (10,000 buckets) from Node", restChart));
  } finally {
    await browser.close();
    await service.stop();
  }
}

console.log(machineLine());
const sizes = bundleSizes();
console.log(`initial JavaScript (index.html: ${sizes.entryFiles} files) ${kB(sizes.entry)} gzip (budget 250 kB); all ${sizes.allFiles} chunks ${kB(sizes.all)} gzip`);
console.log(`settings: ${FLEET.toLocaleString("en")} devices, ${RUNS} runs each, Chromium headless 1280x800, a fresh signed-in context per overview and chart run`);
if (!process.env.BENCH_DB) process.env.BENCH_DB = "pglite";
await onEachDatabase(run);
