// The disruption budget: how many devices of one group may be "unavailable" at once (a
// deployment's: told to install and not yet running or failed; a job's: handed the action and
// not yet done), and how many held-back devices each group may admit now. Pure
// (test/unit/rollout-engine/budget.test.ts); budget-admission.ts reads the groups' loads and
// applies the admissions in one statement, under the rollout's row lock, so that two
// admissions never both count the same free place.
import type { DisruptionBudget } from "./options.js";
import { ceilPercent } from "../deployments/batch-plan.js";

/** Devices of a group of `size` that may be unavailable at once (at least one: a budget never stops a rollout). */
export function groupLimit(size: number, maxUnavailable: DisruptionBudget["maxUnavailable"]): number {
  return "count" in maxUnavailable ? maxUnavailable.count : Math.max(1, ceilPercent(size, maxUnavailable.percent));
}

export interface GroupLoad {
  /** the group's label values */
  key: string;
  /** devices of the rollout in the group */
  size: number;
  /** told to install, not yet running or failed */
  busy: number;
  /** held back by the budget (or due to retry), waiting for a place */
  waiting: number;
}

/** How many waiting devices each group admits now: the free places, never more than wait. */
export function admissions(groups: GroupLoad[], budget: DisruptionBudget): Map<string, number> {
  const result = new Map<string, number>();
  for (const g of groups) {
    const free = Math.max(0, groupLimit(g.size, budget.maxUnavailable) - g.busy);
    const admit = Math.min(free, g.waiting);
    if (admit > 0) result.set(g.key, admit);
  }
  return result;
}
