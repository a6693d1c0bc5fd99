// How a batch ended, in the words the API's `summary`, the rollout's reasons and the console's
// rollout page all use. Pure and free of imports (the console imports it too), so that the page
// and the API cannot say it two ways.
//
// The words carry no count of devices: a batch's devices go on reporting after it ended (a
// promoted canary's device retries and fails), so "2 of 3 running, 0 failed" said once would
// be untrue a minute later beside the batch's counts of now. The counts of the moment stay in
// the outcome's own fields (`running`, `failed`, `at`), a record of that time.

/**
 * What happened to a batch once it left in_progress, recorded with it (DeploymentBatch.outcome)
 * and shown in the rollout status: how it ended, who moved it when a person did, and its
 * counts at that moment. A batch is `succeeded` only when `running >= successTarget` then;
 * one an operator moved past below that line is `promoted`, naming them.
 */
export interface BatchOutcome {
  kind: "succeeded" | "promoted" | "failed" | "cancelled";
  /** the operator's move that ended it (promote, approve, abort), null when the service judged it */
  move: "promote" | "approve" | "abort" | null;
  /** who made that move (an e-mail address), null when the service judged it */
  by: string | null;
  /** ISO time */
  at: string;
  running: number;
  failed: number;
  size: number;
  successTarget: number;
}

/** How reasons name a batch: "canary", "batch 2". */
export function batchLabel(index: number): string {
  return index === 0 ? "canary" : `batch ${index}`;
}

/** The outcome in words: "promoted below its success target (3 running needed) by alice@example.com". */
export function outcomeText(o: Pick<BatchOutcome, "kind" | "move" | "by" | "successTarget">): string {
  const by = o.by ? ` by ${o.by}` : "";
  switch (o.kind) {
    case "succeeded":
      return `reached its success target (${o.successTarget} running)${o.move ? `; ${o.move}d${by}` : ""}`;
    case "promoted":
      return `${o.move === "approve" ? "approved" : "promoted"} below its success target (${o.successTarget} running needed)${by}`;
    case "failed":
      return `timed out below its success target (${o.successTarget} running needed)`;
    case "cancelled":
      return `cancelled: the rollout was aborted${by}`;
  }
}

/**
 * When the failed devices of a batch in flight leave too few to reach its success target, what
 * the operator can do; null while the target can still be reached. Said from the batch's counts
 * of now, each time it is shown (never stored: the next retry or report changes it).
 */
export function cannotReachText(batch: { index: number; size: number; failed: number; successTarget: number }): string | null {
  const reachable = batch.size - batch.failed;
  if (reachable >= batch.successTarget) return null;
  const stay = batch.failed === 1 ? "1 device stays" : `${batch.failed} devices stay`;
  return `The ${batchLabel(batch.index)} cannot reach its success target (${batch.successTarget} running) while ${stay} failed (at most ${reachable} can run): `
    + "retry the failed devices, promote it as it is, or abort.";
}
