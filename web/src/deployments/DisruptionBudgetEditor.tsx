// The disruption budget as a person sets it, shared by the deployment form and the New job
// dialog (both take the rollout engine's disruptionBudgetSchema): label keys to group by and
// how many devices of one group may be disrupted at once. ShareField (a count or a percent)
// is also the deployment strategy's canary and batch field.
import { Trash2 } from "lucide-react";
import { Button } from "../ui/Button";
import { described, Field } from "../ui/Field";
import type { BudgetInput } from "./draft";
import type { ShareInput } from "./strategy-form";

export function ShareField({ id, label, value, onChange, error, onRemove }: { id: string; label: string; value: ShareInput; onChange: (v: ShareInput) => void; error?: string; onRemove?: () => void }) {
  return (
    <div className="share-field">
      <Field id={id} label={label} error={error}>
        <div className="row">
          <input id={id} className="input share-amount" inputMode="decimal" value={value.amount} onChange={(e) => onChange({ ...value, amount: e.target.value })} {...described(id, error)} />
          <select className="select" aria-label={`${label}: unit`} value={value.unit} onChange={(e) => onChange({ ...value, unit: e.target.value as ShareInput["unit"] })}>
            <option value="count">devices</option>
            <option value="percent">percent</option>
          </select>
          {onRemove && <Button size="small" variant="ghost" icon={<Trash2 />} aria-label={`Remove ${label.toLowerCase()}`} onClick={onRemove} />}
        </div>
      </Field>
    </div>
  );
}

/** The first problem whose key (the API's path, e.g. `disruptionBudget.groupBy.0`) starts with `prefix`. */
const problemAt = (errors: Record<string, string>, prefix: string) => Object.entries(errors).find(([key]) => key === prefix || key.startsWith(`${prefix}.`))?.[1];

export function DisruptionBudgetEditor({ value, onChange, errors, toggleLabel, wholeGroup }: {
  value: BudgetInput;
  onChange: (value: BudgetInput) => void;
  /** problems keyed by the API's path (`disruptionBudget.…`) */
  errors: Record<string, string>;
  /** the checkbox: what "disrupted" means for this rollout */
  toggleLabel: string;
  /** the hint of the group-by field: what one group is without keys */
  wholeGroup: string;
}) {
  const groupByError = problemAt(errors, "disruptionBudget.groupBy");
  const amountError = problemAt(errors, "disruptionBudget.maxUnavailable") ?? (groupByError ? undefined : errors.disruptionBudget);
  return (
    <>
      <label className="row">
        <input type="checkbox" checked={value.enabled} onChange={(e) => onChange({ ...value, enabled: e.target.checked })} />
        {toggleLabel}
      </label>
      {value.enabled && (
        <div className="grid grid--3">
          <Field id="budget-group-by" label="Group by label keys (comma-separated)" hint={wholeGroup} error={groupByError}>
            <input id="budget-group-by" className="input mono" value={value.groupBy} onChange={(e) => onChange({ ...value, groupBy: e.target.value })} {...described("budget-group-by", groupByError, true)} />
          </Field>
          <ShareField id="budget-max" label="At most unavailable" value={{ unit: value.unit, amount: value.amount }} error={amountError} onChange={(v) => onChange({ ...value, unit: v.unit, amount: v.amount })} />
        </div>
      )}
    </>
  );
}
