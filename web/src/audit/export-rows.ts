// Counts the rows of a streamed export as its text arrives, chunk by chunk, for the progress
// shown while a large export downloads. The service writes (src/http/download.ts):
// * CSV: a header record, then one record per row, each ending in CRLF; a field holding a
//   line break is quoted, so only line feeds outside quotes end a record;
// * JSON: "[", then each row as "\n" + one JSON.stringify line (which never holds a raw line
//   break), then "\n]\n": a row starts wherever a line starts with "{".
// Chunks may split a record or a quote anywhere: the counter keeps its state between them.
export type ExportFormat = "csv" | "json";

export class ExportRowCounter {
  private records = 0;
  private inQuotes = false;
  private lineStart = false;

  constructor(private readonly format: ExportFormat) {}

  push(text: string): void {
    for (let i = 0; i < text.length; i++) {
      const c = text[i];
      if (this.format === "csv") {
        // A doubled quote inside a quoted field toggles twice: it stays quoted.
        if (c === '"') this.inQuotes = !this.inQuotes;
        else if (c === "\n" && !this.inQuotes) this.records++;
      } else {
        if (this.lineStart && c === "{") this.records++;
        this.lineStart = c === "\n";
      }
    }
  }

  /** rows of data so far (the CSV header is not one) */
  get rows(): number {
    return this.format === "csv" ? Math.max(0, this.records - 1) : this.records;
  }
}
