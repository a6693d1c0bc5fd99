// The console shows dates in one format everywhere ("Dec 7, 2026, 2:09:01 AM"): the formatter
// of web/src/ui/time.tsx (formatDateTime, DateTime; formatPreciseDateTime for log lines), never
// a page's own toLocaleDateString, toLocaleString or Intl.DateTimeFormat. (The Users page showed
// "12/7/2026" beside the Organization page's "Dec 7, 2026, 2:09:01 AM".) Checked on every
// source file of web/src: a date formatted anywhere else is listed with its file and line.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const WEB = path.join(ROOT, "web/src");

/** Where dates may be formatted: the one formatter, and the charts' axis ticks (hours, days). */
const FORMATTERS = new Set(["web/src/ui/time.tsx", "web/src/ui/time-series.ts"]);

const DATE_FORMATTING = [
  /\.toLocaleDateString\(/,
  /\.toLocaleTimeString\(/,
  /new Date\([^()]*(\([^()]*\))?[^()]*\)\.toLocaleString\(/,
  /Intl\.DateTimeFormat\((?![^)]*\)\.resolvedOptions)/,
];

function sources(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sources(full);
    return /\.tsx?$/.test(entry.name) && !/\.test\.tsx?$/.test(entry.name) ? [full] : [];
  });
}

describe("dates in the console", () => {
  it("are formatted by web/src/ui/time.tsx only", () => {
    const offenders: string[] = [];
    for (const file of sources(WEB)) {
      const relative = path.relative(ROOT, file).split(path.sep).join("/");
      if (FORMATTERS.has(relative)) continue;
      fs.readFileSync(file, "utf8").split("\n").forEach((line, i) => {
        if (DATE_FORMATTING.some((pattern) => pattern.test(line))) offenders.push(`${relative}:${i + 1}: ${line.trim()}`);
      });
    }
    expect(offenders).toEqual([]);
  });

  it("the check finds what it is for", () => {
    const found = (line: string) => DATE_FORMATTING.some((pattern) => pattern.test(line));
    expect(found("{new Date(u.createdAt).toLocaleDateString()}")).toBe(true);
    expect(found("const when = new Date(run.createdAt).toLocaleString();")).toBe(true);
    expect(found("new Date(sw.expiresAt).toLocaleTimeString([], { hour: \"2-digit\" })")).toBe(true);
    expect(found("const f = new Intl.DateTimeFormat(undefined, { month: \"short\" });")).toBe(true);
    expect(found("`${total.toLocaleString()} entries`")).toBe(false);
    expect(found("Intl.DateTimeFormat().resolvedOptions().timeZone")).toBe(false);
  });
});
