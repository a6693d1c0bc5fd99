// Draws a bench/fleet-day.ts run as one SVG file (no browser): six panels over the minutes of
// the run, from its minutes.json: request p99 by kind, requests and errors per minute, intake
// (acknowledged against stored), the rollout's progress, CPU, memory and database size.
//
//   npx tsx bench/support/fleet-day-chart.ts <run folder>   (writes <run folder>/chart.svg)
//
// Hand-written SVG rather than a charting library: the console's uPlot draws on a canvas in a
// page, and the libraries that render SVG in Node (Vega with Vega-Lite) would bring dozens of
// packages into the project's dependencies for six line charts of at most a few hundred
// points; polylines on a grid are all these need.
import fs from "node:fs";
import path from "node:path";
import type { MinuteRow } from "./fleet-day-results.js";

interface Series {
  name: string;
  values: (number | null)[];
}

const WIDTH = 960;
const PANEL_HEIGHT = 200;
const MARGIN = { left: 70, right: 200, top: 30, bottom: 30 };
const COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"];

const escape = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

/** A round upper bound of the axis (1, 2 or 5 times a power of ten). */
function niceMax(max: number): number {
  if (!(max > 0)) return 1;
  const power = 10 ** Math.floor(Math.log10(max));
  return [1, 2, 5, 10].map((m) => m * power).find((v) => v >= max)!;
}

function panel(index: number, title: string, unit: string, minutes: number[], series: Series[]): string {
  const top = index * (PANEL_HEIGHT + MARGIN.top + MARGIN.bottom) + MARGIN.top;
  const plotWidth = WIDTH - MARGIN.left - MARGIN.right;
  const max = niceMax(Math.max(0, ...series.flatMap((s) => s.values.filter((v): v is number => v !== null && Number.isFinite(v)))));
  const lastMinute = Math.max(1, ...minutes);
  const x = (minute: number) => MARGIN.left + (minute / lastMinute) * plotWidth;
  const y = (v: number) => top + PANEL_HEIGHT - (v / max) * PANEL_HEIGHT;
  const parts = [`<text x="${MARGIN.left}" y="${top - 10}" font-weight="bold">${escape(title)}</text>`];
  for (let i = 0; i <= 4; i++) {
    const v = (max * i) / 4;
    parts.push(`<line x1="${MARGIN.left}" x2="${MARGIN.left + plotWidth}" y1="${y(v)}" y2="${y(v)}" stroke="#ddd"/>`,
      `<text x="${MARGIN.left - 6}" y="${y(v) + 4}" text-anchor="end">${+v.toPrecision(3)}${i === 4 ? ` ${unit}` : ""}</text>`);
  }
  const step = Math.max(1, Math.ceil(lastMinute / 12));
  for (let m = 0; m <= lastMinute; m += step) parts.push(`<text x="${x(m)}" y="${top + PANEL_HEIGHT + 16}" text-anchor="middle">${m}</text>`);
  series.forEach((s, i) => {
    const color = COLORS[i % COLORS.length];
    // a gap where a minute has no value
    let d = "";
    let pen = false;
    s.values.forEach((v, j) => {
      if (v === null || !Number.isFinite(v)) return void (pen = false);
      d += `${pen ? "L" : "M"}${x(minutes[j]).toFixed(1)},${y(v).toFixed(1)} `;
      pen = true;
    });
    parts.push(`<path d="${d}" fill="none" stroke="${color}" stroke-width="1.6"/>`,
      `<rect x="${WIDTH - MARGIN.right + 12}" y="${top + i * 18}" width="12" height="3" fill="${color}"/>`,
      `<text x="${WIDTH - MARGIN.right + 30}" y="${top + i * 18 + 5}">${escape(s.name)}</text>`);
  });
  return parts.join("\n");
}

export function fleetDayChart(label: string, rows: MinuteRow[]): string {
  const minutes = rows.map((r) => r.minute);
  const kinds = Object.keys(rows[0]?.kinds ?? {});
  const of = (pick: (r: MinuteRow) => number | null) => rows.map(pick);
  const panels: [string, string, Series[]][] = [
    ["Request latency, p99 per minute", "ms", kinds.map((k) => ({ name: k, values: of((r) => r.kinds[k]?.p99 ?? null) }))],
    ["Requests per minute, and those not taken (deferred 429/503, other 4xx and 5xx, unanswered)", "", [
      ...["heartbeat", "telemetry", "logs"].map((k) => ({ name: k, values: of((r) => r.kinds[k]?.count ?? 0) })),
      { name: "not taken, all kinds", values: of((r) => Object.values(r.kinds).reduce((sum, f) => sum + (f ? f.count - f.ok : 0), 0)) },
    ]],
    ["Intake since the start: acknowledged and stored", "", [
      { name: "snapshots acknowledged", values: of((r) => r.snapshotsAcknowledged) },
      { name: "snapshots stored", values: of((r) => r.snapshotsStored) },
      { name: "log lines acknowledged", values: of((r) => r.logLinesAcknowledged) },
      { name: "log lines stored", values: of((r) => r.logLinesStored) },
    ]],
    ["Deployments: devices running", "", [
      { name: "staged rollout", values: of((r) => r.rolloutRunning) },
      { name: "continuous (joined on return)", values: of((r) => r.continuousRunning) },
      { name: "devices offline", values: of((r) => r.devicesOffline) },
    ]],
    ["CPU (100 % = one core)", "%", [
      { name: "service", values: of((r) => r.serviceCpuPercent) },
      { name: "load generator", values: of((r) => r.loadGeneratorCpuPercent) },
      { name: "PostgreSQL", values: of((r) => r.postgresCpuPercent) },
    ]],
    ["Memory and database", "MB", [
      { name: "service RSS", values: of((r) => r.serviceRssMb) },
      { name: "load generator RSS", values: of((r) => r.loadGeneratorRssMb) },
      { name: "database size", values: of((r) => r.databaseMb) },
    ]],
  ];
  const height = panels.length * (PANEL_HEIGHT + MARGIN.top + MARGIN.bottom) + 30;
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" font-family="sans-serif" font-size="11">
<rect width="100%" height="100%" fill="white"/>
${panels.map(([title, unit, series], i) => panel(i, title, unit, minutes, series)).join("\n")}
<text x="${MARGIN.left}" y="${height - 8}" fill="#555">${escape(label)}; x: minutes after the enrollment (the last point: after the devices drained)</text>
</svg>
`;
}

if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(new URL(import.meta.url).pathname)) {
  const folder = process.argv[2];
  if (!folder) {
    console.error("usage: npx tsx bench/support/fleet-day-chart.ts <run folder with minutes.json>");
    process.exit(2);
  }
  const { label, rows } = JSON.parse(fs.readFileSync(path.join(folder, "minutes.json"), "utf8")) as { label: string; rows: MinuteRow[] };
  const file = path.join(folder, "chart.svg");
  fs.writeFileSync(file, fleetDayChart(label, rows));
  console.log(`wrote ${file}`);
}
