import { describe, expect, it } from "vitest";
import { csvField } from "../../../src/http/download";
import { ExportRowCounter, type ExportFormat } from "./export-rows";

/** A file as the service writes it (src/http/download.ts's framing). */
function file(format: ExportFormat, rows: Record<string, unknown>[]): string {
  if (format === "json") return "[" + rows.map((r, i) => (i === 0 ? "" : ",") + "\n" + JSON.stringify(r)).join("") + "\n]\n";
  const header = ["id", "message", "changes"].map(csvField).join(",") + "\r\n";
  return header + rows.map((r) => [r.id, r.message, r.changes].map(csvField).join(",") + "\r\n").join("");
}

const tricky = [
  { id: "a", message: 'quoted "words", a comma\r\nand a line break', changes: { name: { from: "x\ny", to: "{" } } },
  { id: "b", message: "\n{ looks like a row", changes: null },
  { id: "c", message: "", changes: ["\"", "\r\n"] },
];

describe("ExportRowCounter", () => {
  for (const format of ["csv", "json"] as const) {
    it(`counts ${format} rows whatever the chunks, line breaks and quotes inside fields`, () => {
      const text = file(format, tricky);
      // every split point, and one character at a time
      for (let at = 0; at <= text.length; at++) {
        const counter = new ExportRowCounter(format);
        counter.push(text.slice(0, at));
        counter.push(text.slice(at));
        expect(counter.rows).toBe(3);
      }
      const counter = new ExportRowCounter(format);
      for (const c of text) counter.push(c);
      expect(counter.rows).toBe(3);
    });

    it(`reads an empty ${format} export as no rows`, () => {
      const counter = new ExportRowCounter(format);
      counter.push(file(format, []));
      expect(counter.rows).toBe(0);
    });
  }
});
