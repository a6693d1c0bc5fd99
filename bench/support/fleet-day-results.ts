// The files a bench/fleet-day.ts run leaves: the per-minute series as JSON (for the chart,
// bench/support/fleet-day-chart.ts) and as CSV (one column per figure, request kinds flattened
// as `<kind> p99` ...), and the summary.
import fs from "node:fs";
import path from "node:path";
import type { KindFigures } from "./request-stats.js";

export interface MinuteRow {
  minute: number;
  at: string;
  /** the sample after the drain at the end */
  final: boolean;
  loadAverage: number;
  /** requests of the minute by kind (null: none) */
  kinds: Record<string, KindFigures | null>;
  heartbeatsAcknowledged: number;
  heartbeatsWritten: number;
  snapshotsAcknowledged: number;
  snapshotsStored: number;
  logLinesAcknowledged: number;
  logLinesStored: number;
  snapshotsWaiting: number;
  logLinesWaiting: number;
  devicesOffline: number;
  devicesLabelled: number;
  rolloutState: string;
  rolloutRunning: number;
  rolloutFailed: number;
  rolloutDevices: number;
  continuousJoined: number;
  continuousRunning: number;
  alertEvaluationAgeSeconds: number | null;
  serviceCpuPercent: number;
  serviceRssMb: number;
  loadGeneratorCpuPercent: number;
  loadGeneratorRssMb: number;
  postgresCpuPercent: number | null;
  databaseMb: number;
  databaseGrowthMb: number;
  expiredDayDropped: boolean;
}

const KIND_COLUMNS = ["count", "p50", "p99", "max", "deferred", "refused", "failed", "unanswered"] as const;

function flatten(row: MinuteRow): Record<string, string | number | boolean | null> {
  const { kinds, ...rest } = row;
  const flat: Record<string, string | number | boolean | null> = { ...rest };
  for (const [kind, figures] of Object.entries(kinds)) for (const c of KIND_COLUMNS) flat[`${kind} ${c}`] = figures ? figures[c] : null;
  return flat;
}

const cell = (v: string | number | boolean | null) => (v === null ? "" : /[",\n]/.test(String(v)) ? `"${String(v).replaceAll('"', '""')}"` : String(v));

/** Writes minutes.json, minutes.csv and summary.json into a new folder under `root`; returns the folder. */
export function fleetDayFiles(root: string, label: string, rows: MinuteRow[], summary: unknown): string {
  const slug = label.toLowerCase().includes("pglite") ? "pglite" : "postgresql";
  const folder = path.join(root, `fleet-day-${slug}-${new Date().toISOString().replace(/[:.]/g, "-").slice(0, 19)}`);
  fs.mkdirSync(folder, { recursive: true });
  fs.writeFileSync(path.join(folder, "minutes.json"), JSON.stringify({ label, rows }, null, 1));
  const flat = rows.map(flatten);
  const columns = Object.keys(flat[0] ?? {});
  fs.writeFileSync(path.join(folder, "minutes.csv"), [columns.map(cell).join(","), ...flat.map((r) => columns.map((c) => cell(r[c] ?? null)).join(","))].join("\n") + "\n");
  fs.writeFileSync(path.join(folder, "summary.json"), JSON.stringify(summary, null, 2));
  return folder;
}
