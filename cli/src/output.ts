// How answers are printed: `-o table` (the default on a terminal), `wide` (every scalar
// column), `json` (the default when stdout is not a terminal: a script that forgot -o still
// gets something it can parse), `yaml`, and `name` (one id per line, for xargs).
import { stringify } from "yaml";

import type { Format } from "./formats.js";

export type { Format };

/** Columns shown first (and the only ones shown by `table`) when an item has them. */
const PREFERRED = ["id", "key", "name", "email", "status", "state", "rolloutState", "role", "version", "latestVersion", "labels", "lastSeenAt", "createdAt"];
const NARROW_COLUMNS = 6;

const isScalar = (v: unknown) => v === null || ["string", "number", "boolean"].includes(typeof v);

function cell(value: unknown): string {
  if (value === null || value === undefined) return "";
  if (typeof value === "object" && !Array.isArray(value)) {
    const entries = Object.entries(value as Record<string, unknown>);
    if (entries.every(([, v]) => isScalar(v))) return entries.map(([k, v]) => `${k}=${v}`).join(",");
    return JSON.stringify(value);
  }
  if (Array.isArray(value)) return value.every(isScalar) ? value.join(",") : JSON.stringify(value);
  return String(value).replace(/\s+/g, " ");
}

const header = (key: string) => key.replace(/([a-z0-9])([A-Z])/g, "$1_$2").toUpperCase();

function columnsOf(items: Record<string, unknown>[], wide: boolean): string[] {
  const keys = [...new Set(items.flatMap((item) => Object.keys(item)))];
  const printable = keys.filter((k) => items.some((item) => item[k] !== undefined) && (wide || items.every((item) => isScalar(item[k]) || k === "labels")));
  const preferred = PREFERRED.filter((k) => printable.includes(k));
  if (wide) return [...preferred, ...printable.filter((k) => !preferred.includes(k) && items.every((item) => isScalar(item[k]) || typeof item[k] !== "object" || k === "labels"))];
  return (preferred.length ? preferred : printable).slice(0, NARROW_COLUMNS);
}

export function table(rows: string[][]): string {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  return rows.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]))).join("   ").trimEnd()).join("\n") + "\n";
}

/** The list an answer holds, if it is one: `{ items }` or an array. */
export function listOf(data: unknown): Record<string, unknown>[] | null {
  if (Array.isArray(data)) return data as Record<string, unknown>[];
  if (data && typeof data === "object" && Array.isArray((data as { items?: unknown }).items)) return (data as { items: Record<string, unknown>[] }).items;
  return null;
}

export function render(data: unknown, format: Format): string {
  if (format === "json") return JSON.stringify(data, null, 2) + "\n";
  if (format === "yaml") return stringify(data);
  const list = listOf(data);
  if (format === "name") {
    const items = list ?? (data && typeof data === "object" ? [data as Record<string, unknown>] : []);
    return items.map((item) => String(item.id ?? item.key ?? item.name ?? "")).filter(Boolean).map((n) => `${n}\n`).join("");
  }
  if (data === undefined || data === null) return "";
  if (typeof data !== "object") return `${String(data)}\n`;
  if (list) {
    if (list.length === 0) return "No items.\n";
    if (!list.every((item) => item && typeof item === "object")) return list.map((v) => `${cell(v)}\n`).join("");
    const columns = columnsOf(list, format === "wide");
    const total = (data as { total?: number }).total;
    const footer = typeof total === "number" && total > list.length ? `(${list.length} of ${total}: --all for every one, or --limit/--offset)\n` : "";
    return table([columns.map(header), ...list.map((item) => columns.map((c) => cell(item[c])))]) + footer;
  }
  // one object: a key/value table of its fields
  const entries = Object.entries(data as Record<string, unknown>).filter(([, v]) => format === "wide" || isScalar(v) || (v && typeof v === "object" && Object.values(v).every(isScalar)));
  return table(entries.map(([k, v]) => [`${header(k)}:`, cell(v)]));
}
