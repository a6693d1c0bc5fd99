// The batches as a timeline, canary first: each a stacked bar of its devices by state, with
// the success line (devices that must run) and the failure line (failures that pause it),
// the counts in words beside it, and the time left before the batch in flight times out.
import { useEffect, useState, type ReactNode } from "react";
import { formatDateTime } from "../../ui/time";
import { counted } from "../../../../src/lib/plural";
import { BATCH_STATE_TONE, batchStateText } from "./labels";
import { batchName, batchSegments, clockRuns, failureLimit, outcomeText, thresholdLines, timeLeft, type Batch, type Rollout, type Segment } from "./timeline";

export function BatchTimeline({ rollout }: { rollout: Rollout }) {
  const now = useSecondClock(rollout.batches.some((b) => clockRuns(rollout, b)));
  return (
    <ol className="timeline" aria-label="Batches">
      {rollout.batches.map((batch) => (
        <BatchRow key={batch.index} rollout={rollout} batch={batch} now={now} />
      ))}
    </ol>
  );
}

function BatchRow({ rollout, batch, now }: { rollout: Rollout; batch: Batch; now: number }) {
  const name = batchName(batch);
  const segments = batchSegments(batch.counts);
  const lines = thresholdLines(batch, rollout.failureThreshold);
  const current = rollout.currentBatch === batch.index;
  const summary = segments.map((s) => `${s.label} ${s.value}`).join(", ");
  return (
    <li className={current ? "timeline__item timeline__item--current" : "timeline__item"} aria-label={name} data-batch={batch.index}>
      <span className={`timeline__dot timeline__dot--${batch.state}`} aria-hidden="true" />
      <div className="timeline__body">
        <div className="timeline__head">
          <strong>{name}</strong>
          <span className={`badge ${rollout.state === "paused" && batch.state === "in_progress" ? "badge--warning" : BATCH_STATE_TONE[batch.state]}`} data-testid={`batch-state-${batch.index}`}>
            {batchStateText(rollout, batch)}
          </span>
          <span className="muted">{counted(batch.size, "device")}</span>
          {clockRuns(rollout, batch) && batch.deadlineAt && (
            <span className="timeline__clock" title={`Times out at ${formatDateTime(batch.deadlineAt)}`} data-testid={`timeout-${batch.index}`}>
              {timeLeft(batch.deadlineAt, now)}
            </span>
          )}
        </div>
        <BatchBar name={name} size={batch.size} segments={segments} label={`${name}: ${summary}; succeeds at ${batch.successTarget} running, pauses at ${failureLimit(batch.size, rollout.failureThreshold)} failed`}>
          <span className="batch-bar__line batch-bar__line--success" style={{ left: `${lines.success}%` }} aria-hidden="true" />
          <span className="batch-bar__line batch-bar__line--failure" style={{ left: `${lines.failure}%` }} aria-hidden="true" />
        </BatchBar>
        {batch.counts.offline > 0 && batch.state !== "cancelled" && (
          <p className="batch-offline" data-testid={`batch-offline-${batch.index}`}>
            {counted(batch.counts.offline, "device")} of this batch {batch.counts.offline === 1 ? "is" : "are"} offline now (no heartbeat for three intervals): {batch.counts.offline === 1 ? "it installs" : "they install"} once back
            {batch.state === "in_progress" ? "; until then the batch cannot count " + (batch.counts.offline === 1 ? "it" : "them") + " as running." : "."}
          </p>
        )}
        {batch.outcome && (
          <p className="batch-outcome" data-testid={`batch-outcome-${batch.index}`}>
            {name}: {outcomeText(batch.outcome)}{batch.outcome.move ? <> · <span className="faint">{formatDateTime(batch.outcome.at)}</span></> : null}
          </p>
        )}
        <p className="faint batch-lines">
          Success line: {batch.successTarget} running ({rollout.successThreshold}%) · failure line: {failureLimit(batch.size, rollout.failureThreshold)} failed ({rollout.failureThreshold}%)
        </p>
      </div>
    </li>
  );
}

/**
 * A batch's devices by state: a stacked bar (with `children` drawn over it: threshold lines)
 * and the counts beside it; a rollout's batches and a job's (jobs/JobPage.tsx) alike.
 */
export function BatchBar({ name, size, segments, label, children }: {
  name: string; size: number; label: string; children?: ReactNode;
  segments: ReadonlyArray<Pick<Segment, "label" | "value" | "color" | "rare"> & { key: string }>;
}) {
  return (
    <>
      <div className="batch-bar" role="img" aria-label={label}>
        {segments.map((s) => s.value > 0 && (
          <span key={s.key} className="batch-bar__segment" style={{ width: `${(s.value / Math.max(1, size)) * 100}%`, background: s.color }} />
        ))}
        {children}
      </div>
      <ul className="batch-counts" aria-label={`${name} devices by state`}>
        {segments.filter((s) => !s.rare || s.value > 0).map((s) => (
          <li key={s.key} data-count={s.key}>
            <span className="legend__swatch" style={{ background: s.color }} aria-hidden="true" />
            {s.label} <strong className="num">{s.value}</strong>
          </li>
        ))}
      </ul>
    </>
  );
}

/** The current time, every second while a batch's clock runs (the countdown), else still. */
function useSecondClock(running: boolean): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    if (!running) return;
    setNow(Date.now());
    const timer = window.setInterval(() => setNow(Date.now()), 1000);
    return () => window.clearInterval(timer);
  }, [running]);
  return now;
}
