// A job's pacing as the New job form asks for it: canary devices, the first batch after them
// (the rest follows in a second batch) and the failure share that pauses it. Shared by the jobs
// form and a configuration layer's staged rollout (config-layers/RolloutFields.tsx), which is
// an apply-configuration job with the same options.
export interface StrategyDraft { canary: number; batchPercent: number; failureThreshold: number }

export const DEFAULT_STRATEGY: StrategyDraft = { canary: 1, batchPercent: 50, failureThreshold: 20 };

/** The API's `strategy` (the jobs' schema) from the fields. */
export function strategyOf(s: StrategyDraft) {
  return { canary: { count: s.canary }, batches: [{ percent: s.batchPercent }, { percent: 100 }], successThreshold: 90, failureThreshold: s.failureThreshold };
}

const clampPercent = (text: string) => Math.min(100, Math.max(1, Number(text) || 1));

export function StrategyFields({ idPrefix, value, onChange }: { idPrefix: string; value: StrategyDraft; onChange: (value: StrategyDraft) => void }) {
  return (
    <div className="row">
      <div className="field">
        <label htmlFor={`${idPrefix}-canary`}>Canary devices</label>
        <input id={`${idPrefix}-canary`} className="input" type="number" min={1} value={value.canary} onChange={(e) => onChange({ ...value, canary: Math.max(1, Number(e.target.value) || 1) })} />
      </div>
      <div className="field">
        <label htmlFor={`${idPrefix}-batch`}>First batch after it (% of the rest)</label>
        <input id={`${idPrefix}-batch`} className="input" type="number" min={1} max={100} value={value.batchPercent} onChange={(e) => onChange({ ...value, batchPercent: clampPercent(e.target.value) })} />
      </div>
      <div className="field">
        <label htmlFor={`${idPrefix}-failure`}>Pause when failed reach (% of a batch)</label>
        <input id={`${idPrefix}-failure`} className="input" type="number" min={1} max={100} value={value.failureThreshold} onChange={(e) => onChange({ ...value, failureThreshold: clampPercent(e.target.value) })} />
      </div>
    </div>
  );
}
