// Streams a download (CSV or a JSON array) page by page: each page of rows is written as it
// arrives from the database and the next one is read only once the socket has taken it, so
// memory holds one page whatever the size of the export.
import type { Response } from "express";

export type DownloadFormat = "csv" | "json";

export interface Column<T> {
  header: string;
  value: (row: T) => unknown;
}

const CONTENT_TYPES: Record<DownloadFormat, string> = {
  csv: "text/csv; charset=utf-8",
  json: "application/json; charset=utf-8",
};

/** `<base>-<UTC timestamp>.<ext>`: safe characters only, so the header needs no escaping. */
export function downloadFileName(base: string, format: DownloadFormat, now = new Date()) {
  const stamp = now.toISOString().replace(/[-:]/g, "").replace(/\.\d+Z$/, "Z");
  return `${base}-${stamp}.${format}`;
}

/** RFC 4180 field: quoted when it holds a separator, quote or line break. Cells that a
 *  spreadsheet would run as a formula (=, +, -, @) are prefixed with a quote character. */
export function csvField(value: unknown): string {
  if (value === null || value === undefined) return "";
  let text = value instanceof Date ? value.toISOString() : typeof value === "object" ? JSON.stringify(value) : String(value);
  if (/^[=+\-@\t\r]/.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/** Writes a chunk, waiting for the socket to drain; false once the client has gone. */
async function write(res: Response, chunk: string): Promise<boolean> {
  if (res.destroyed || res.writableEnded) return false;
  if (res.write(chunk)) return true;
  // Wait for whichever comes first, and drop the other listener (they would pile up).
  await new Promise<void>((resolve) => {
    const done = () => {
      res.off("drain", done);
      res.off("close", done);
      resolve();
    };
    res.on("drain", done);
    res.on("close", done);
  });
  return !res.destroyed;
}

export async function streamDownload<T>(
  res: Response,
  opts: { format: DownloadFormat; fileName: string; columns: Column<T>[]; toJson: (row: T) => unknown },
  pages: AsyncIterable<T[]>,
): Promise<number> {
  res.status(200);
  res.setHeader("Content-Type", CONTENT_TYPES[opts.format]);
  res.setHeader("Content-Disposition", `attachment; filename="${opts.fileName}"`);
  res.setHeader("Cache-Control", "no-store");
  res.flushHeaders();
  const csv = opts.format === "csv";
  let count = 0;
  if (!(await write(res, csv ? opts.columns.map((c) => csvField(c.header)).join(",") + "\r\n" : "["))) return count;
  for await (const page of pages) {
    if (page.length === 0) continue;
    const chunk = csv
      ? page.map((row) => opts.columns.map((c) => csvField(c.value(row))).join(",") + "\r\n").join("")
      : page.map((row, i) => (count + i === 0 ? "" : ",") + "\n" + JSON.stringify(opts.toJson(row))).join("");
    count += page.length;
    if (!(await write(res, chunk))) return count;
  }
  if (!csv) await write(res, "\n]\n");
  res.end();
  return count;
}
