// Labels as editable key/value rows, checked by the API's rules as they are typed
// (src/modules/devices/selector.ts): used for a token's labels and a device's labels.
import { Plus, X } from "lucide-react";
import { LABEL_KEY_PATTERN, LABEL_KEY_RULE, LABEL_VALUE_PATTERN, LABEL_VALUE_RULE, MAX_LABELS_PER_DEVICE } from "../../../src/modules/devices/selector";
import { Button } from "../ui/Button";
import "./devices.css";

export interface LabelRow {
  key: string;
  value: string;
}

export function rowsOfLabels(labels: Record<string, string>): LabelRow[] {
  return Object.entries(labels).sort(([a], [b]) => a.localeCompare(b)).map(([key, value]) => ({ key, value }));
}

function rowProblem(row: LabelRow, rows: LabelRow[]): string | null {
  if (!LABEL_KEY_PATTERN.test(row.key)) return row.key ? LABEL_KEY_RULE : "a key is required";
  if (!LABEL_VALUE_PATTERN.test(row.value)) return LABEL_VALUE_RULE;
  if (rows.filter((r) => r.key === row.key).length > 1) return `"${row.key}" appears twice`;
  return null;
}

/** The label set of the rows, or the first problem. */
export function labelsOfRows(rows: LabelRow[]): { ok: true; labels: Record<string, string> } | { ok: false; problem: string } {
  if (rows.length > MAX_LABELS_PER_DEVICE) return { ok: false, problem: `at most ${MAX_LABELS_PER_DEVICE} labels` };
  for (const row of rows) {
    const problem = rowProblem(row, rows);
    if (problem) return { ok: false, problem };
  }
  return { ok: true, labels: Object.fromEntries(rows.map((r) => [r.key, r.value])) };
}

export function LabelsEditor({ rows, onChange, legend = "Labels" }: { rows: LabelRow[]; onChange: (rows: LabelRow[]) => void; legend?: string }) {
  const set = (i: number, patch: Partial<LabelRow>) => onChange(rows.map((r, j) => (j === i ? { ...r, ...patch } : r)));
  return (
    <fieldset className="labels-editor">
      <legend className="field__label">{legend}</legend>
      {rows.length === 0 && <p className="faint">No labels.</p>}
      {rows.map((row, i) => {
        const problem = rowProblem(row, rows);
        return (
          <div key={i} className="labels-editor__row">
            <input className="input mono" aria-label={`Label ${i + 1} key`} value={row.key} placeholder="key" onChange={(e) => set(i, { key: e.target.value.trim() })} aria-invalid={problem ? true : undefined} />
            <span aria-hidden="true">=</span>
            <input className="input mono" aria-label={`Label ${i + 1} value`} value={row.value} placeholder="value" onChange={(e) => set(i, { value: e.target.value })} />
            <Button size="small" variant="ghost" icon={<X />} aria-label={`Remove label ${row.key || i + 1}`} onClick={() => onChange(rows.filter((_, j) => j !== i))} />
            {problem && (row.key || row.value) && <span className="field__error labels-editor__problem">{problem}</span>}
          </div>
        );
      })}
      <div>
        <Button size="small" icon={<Plus />} onClick={() => onChange([...rows, { key: "", value: "" }])} disabled={rows.length >= MAX_LABELS_PER_DEVICE}>
          Add label
        </Button>
      </div>
    </fieldset>
  );
}
