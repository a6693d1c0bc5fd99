// A streamed export (POST /api/v1/<area>/export) downloaded by the browser as a real file,
// with its progress: the answer is read chunk by chunk (bytes, and rows counted as they
// arrive), then handed to the browser as a Blob under the file name the service chose. The
// session cookie goes along (same origin), and a POST from this page passes the CSRF rule.
// The service streams without a length: the total shown is what a search with the same
// filters counted just before (capped at what the export may hold).
import { useRef, useState } from "react";
import { ExportRowCounter, type ExportFormat } from "./export-rows";

export interface ExportProgress {
  format: ExportFormat;
  bytes: number;
  rows: number;
  /** rows expected (the list's total for these filters), when known */
  expected?: number;
  /** done: the file the browser received */
  fileName?: string;
  error?: { message: string; requestId?: string };
}

/** "2.4 MB", "812 kB", "96 B" */
export function formatBytes(bytes: number): string {
  if (bytes < 1000) return `${bytes} B`;
  const units = ["kB", "MB", "GB"];
  let value = bytes / 1000;
  let unit = 0;
  while (value >= 1000 && unit < units.length - 1) (value /= 1000), unit++;
  return `${value.toFixed(value < 10 ? 1 : 0)} ${units[unit]}`;
}

function fileNameOf(disposition: string | null, fallback: string): string {
  const name = disposition && /filename="([^"]+)"/.exec(disposition)?.[1];
  return name || fallback;
}

function saveFile(blob: Blob, fileName: string) {
  const url = URL.createObjectURL(blob);
  const link = document.createElement("a");
  link.href = url;
  link.download = fileName;
  document.body.append(link);
  link.click();
  link.remove();
  // The click has handed the Blob to the browser's download; the URL is no longer needed.
  setTimeout(() => URL.revokeObjectURL(url), 0);
}

async function errorOf(res: Response): Promise<ExportProgress["error"]> {
  const body = (await res.json().catch(() => null)) as { message?: string; data?: { requestId?: string } } | null;
  return { message: body?.message ?? `The export failed (${res.status}).`, requestId: body?.data?.requestId };
}

export function useExportDownload(path: "/api/v1/audit/export" | "/api/v1/activity/export") {
  const [progress, setProgress] = useState<ExportProgress | null>(null);
  const abort = useRef<AbortController | null>(null);

  async function start(format: ExportFormat, body: Record<string, unknown>, expected?: number) {
    abort.current?.abort();
    const controller = new AbortController();
    abort.current = controller;
    const state: ExportProgress = { format, bytes: 0, rows: 0, expected };
    setProgress({ ...state });
    try {
      const res = await fetch(path, {
        method: "POST",
        headers: { "content-type": "application/json", accept: format === "csv" ? "text/csv" : "application/json" },
        body: JSON.stringify({ ...body, format }),
        credentials: "same-origin",
        signal: controller.signal,
      });
      if (!res.ok || !res.body) {
        setProgress({ ...state, error: await errorOf(res) });
        return;
      }
      const reader = res.body.getReader();
      const decoder = new TextDecoder();
      const counter = new ExportRowCounter(format);
      const chunks: Uint8Array<ArrayBuffer>[] = [];
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        chunks.push(value);
        state.bytes += value.byteLength;
        counter.push(decoder.decode(value, { stream: true }));
        state.rows = counter.rows;
        setProgress({ ...state });
      }
      const fileName = fileNameOf(res.headers.get("content-disposition"), `export.${format}`);
      saveFile(new Blob(chunks, { type: res.headers.get("content-type") ?? "application/octet-stream" }), fileName);
      setProgress({ ...state, fileName });
    } catch (err) {
      if (controller.signal.aborted) setProgress(null);
      else setProgress({ ...state, error: { message: err instanceof Error ? err.message : String(err) } });
    }
  }

  return {
    progress,
    busy: !!progress && !progress.fileName && !progress.error,
    start,
    cancel: () => abort.current?.abort(),
    dismiss: () => setProgress(null),
  };
}
