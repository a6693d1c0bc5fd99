// "Roll out in stages" in a layer's save dialog: the new revision goes out as an
// apply-configuration job (docs/configuration.md, "Rollout") with the jobs' own options, asked
// for with the jobs form's pieces: canary, batches and failure threshold, maintenance windows,
// disruption budget. Unchecked, the save releases the revision to every device at once.
import { StrategyFields, strategyOf, DEFAULT_STRATEGY, type StrategyDraft } from "../jobs/StrategyFields";
import { MaintenanceWindowsEditor, windowProblems } from "../deployments/MaintenanceWindowsEditor";
import { DisruptionBudgetEditor } from "../deployments/DisruptionBudgetEditor";
import { budgetValue, EMPTY_DRAFT, type BudgetInput } from "../deployments/draft";
import type { ActionWindows } from "../../../src/modules/rollout-engine/options";

export interface RolloutDraft {
  staged: boolean;
  strategy: StrategyDraft;
  windows: ActionWindows | null;
  budget: BudgetInput;
}

export const NO_ROLLOUT: RolloutDraft = { staged: false, strategy: DEFAULT_STRATEGY, windows: null, budget: EMPTY_DRAFT.budget };

/** The PATCH body's `rollout` (absent: released at once). */
export function rolloutOf(r: RolloutDraft, reason: string | undefined) {
  if (!r.staged) return undefined;
  return {
    strategy: strategyOf(r.strategy),
    ...(r.windows ? { maintenanceWindows: r.windows } : {}),
    ...(r.budget.enabled ? { disruptionBudget: budgetValue(r.budget) } : {}),
    ...(reason ? { reason } : {}),
  };
}

export function rolloutProblems(r: RolloutDraft): Record<string, string> {
  return r.staged ? windowProblems(r.windows) : {};
}

/** The API names a rollout's fields under `rollout.`; the editors read them without it. */
export function rolloutFieldOf(_message: string, path?: readonly (string | number)[]): string | null {
  return path?.[0] === "rollout" && path.length > 1 ? path.slice(1).join(".") : null;
}

export function RolloutFields({ value, onChange, errors }: { value: RolloutDraft; onChange: (value: RolloutDraft) => void; errors: Record<string, string> }) {
  return (
    <div className="stack stack--tight">
      <label className="row">
        <input type="checkbox" checked={value.staged} onChange={(e) => onChange({ ...value, staged: e.target.checked })} />
        Roll out in stages
      </label>
      {value.staged && (
        <div className="stack">
          <p className="faint">A canary first, then batches; the job pauses when failures reach the threshold. Devices not reached yet keep the revision in effect now.</p>
          <StrategyFields idPrefix="rollout" value={value.strategy} onChange={(strategy) => onChange({ ...value, strategy })} />
          {errors.strategy && <p className="field__error">{errors.strategy}</p>}
          <MaintenanceWindowsEditor value={value.windows} onChange={(windows) => onChange({ ...value, windows })} errors={errors} downloads={false} toggleLabel="Apply it only in maintenance windows" />
          <DisruptionBudgetEditor value={value.budget} onChange={(budget) => onChange({ ...value, budget })} errors={errors}
            toggleLabel="Limit disruption: how many devices of a group may apply it at once" wholeGroup="none: all the layer's devices are one group" />
        </div>
      )}
    </div>
  );
}
