// The export buttons of a list page and the progress of the export under way: rows and bytes
// received (of the rows the filters match, when known), a cancel, and at the end the file the
// browser saved, or the API's refusal with its request id.
import { Download, X } from "lucide-react";
import { Button } from "../ui/Button";
import { Progress } from "../ui/charts";
import type { ExportFormat } from "./export-rows";
import { formatBytes, type useExportDownload } from "./useExportDownload";

const numbers = new Intl.NumberFormat();

export function ExportButtons({ what, exporter, onExport }: {
  what: string;
  exporter: ReturnType<typeof useExportDownload>;
  onExport: (format: ExportFormat) => void;
}) {
  return (
    <>
      <Button icon={<Download />} onClick={() => onExport("csv")} disabled={exporter.busy} aria-label={`Export ${what} as CSV`}>CSV</Button>
      <Button icon={<Download />} onClick={() => onExport("json")} disabled={exporter.busy} aria-label={`Export ${what} as JSON`}>JSON</Button>
    </>
  );
}

export function ExportStatus({ what, exporter }: { what: string; exporter: ReturnType<typeof useExportDownload> }) {
  const p = exporter.progress;
  if (!p) return null;
  const rows = numbers.format(p.rows);
  const of = p.expected !== undefined ? ` of ${numbers.format(p.expected)}` : "";
  return (
    <div className={`alert-box ${p.error ? "alert-box--error" : p.fileName ? "alert-box--success" : "alert-box--info"} export-status`} role="status" aria-label={`Export of the ${what}`}>
      <div className="stack stack--tight export-status__body">
        {p.error ? (
          <>
            <p>The export failed: {p.error.message}</p>
            {p.error.requestId && <span className="request-id">request id {p.error.requestId}</span>}
          </>
        ) : p.fileName ? (
          <p>Downloaded <span className="mono">{p.fileName}</span>: {rows} rows, {formatBytes(p.bytes)}.</p>
        ) : (
          <>
            <p>Exporting the {what} as {p.format.toUpperCase()}: {rows}{of} rows, {formatBytes(p.bytes)} received…</p>
            {p.expected !== undefined && p.expected > 0 && <Progress value={Math.min(p.rows, p.expected)} max={p.expected} label={`Rows exported of the ${what}`} />}
          </>
        )}
      </div>
      {exporter.busy
        ? <Button size="small" variant="ghost" onClick={exporter.cancel}>Cancel export</Button>
        : <Button size="small" variant="ghost" icon={<X />} aria-label="Dismiss" onClick={exporter.dismiss} />}
    </div>
  );
}
