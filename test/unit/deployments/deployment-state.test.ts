// A deployment's one state (deployment-state.ts) over every stored combination: the
// deployment's status × its rollout's state × whether a draft is scheduled (startAt). The
// expected table is written out by hand (docs/deployments.md, "One state"), not derived from
// the code; the list's filter (storedCombinations) is checked to select exactly the
// combinations that compute to each state.
import { describe, expect, it } from "vitest";
import {
  DEPLOYMENT_STATES, IN_PROGRESS_STATES, deploymentState, deploymentStateText, storedCombinations, type DeploymentState, type StoredCombination,
} from "../../../src/modules/deployments/deployment-state.js";
import { ROLLOUT_STATES, type RolloutState } from "../../../src/modules/deployments/rollout-moves.js";
import { DEPLOYMENT_STATUSES, type DeploymentStatus } from "../../../src/modules/deployments/schemas.js";

const R = ROLLOUT_STATES;
/** Columns in ROLLOUT_STATES order: draft, initialized, canary, awaiting_approval, in_progress, paused, completed, aborted, failed. */
const EXPECTED: Record<DeploymentStatus, Record<"unscheduled" | "scheduled", DeploymentState[]>> = {
  draft: {
    unscheduled: ["draft", "draft", "draft", "draft", "draft", "draft", "draft", "draft", "draft"],
    scheduled: ["scheduled", "scheduled", "scheduled", "scheduled", "scheduled", "scheduled", "scheduled", "scheduled", "scheduled"],
  },
  running: {
    unscheduled: ["rolling_out", "rolling_out", "rolling_out", "awaiting_approval", "rolling_out", "paused", "completed", "aborted", "failed"],
    scheduled: ["rolling_out", "rolling_out", "rolling_out", "awaiting_approval", "rolling_out", "paused", "completed", "aborted", "failed"],
  },
  stopping: {
    unscheduled: ["stopping", "stopping", "stopping", "stopping", "stopping", "stopping", "stopping", "stopping", "stopping"],
    scheduled: ["stopping", "stopping", "stopping", "stopping", "stopping", "stopping", "stopping", "stopping", "stopping"],
  },
  stopped: {
    unscheduled: ["stopped", "stopped", "stopped", "stopped", "stopped", "stopped", "stopped", "stopped", "stopped"],
    scheduled: ["stopped", "stopped", "stopped", "stopped", "stopped", "stopped", "stopped", "stopped", "stopped"],
  },
  deleting: {
    unscheduled: ["deleting", "deleting", "deleting", "deleting", "deleting", "deleting", "deleting", "deleting", "deleting"],
    scheduled: ["deleting", "deleting", "deleting", "deleting", "deleting", "deleting", "deleting", "deleting", "deleting"],
  },
};

interface Row {
  status: DeploymentStatus;
  rolloutState: RolloutState;
  startAt: string | null;
  expected: DeploymentState;
}

const ROWS: Row[] = DEPLOYMENT_STATUSES.flatMap((status) =>
  (["unscheduled", "scheduled"] as const).flatMap((schedule) =>
    R.map((rolloutState, i) => ({ status, rolloutState, startAt: schedule === "scheduled" ? "2026-12-01T02:00:00.000Z" : null, expected: EXPECTED[status][schedule][i] })),
  ),
);

/** What a list filter built from `c` selects (service.ts stateWhere, in JS). */
const matches = (c: StoredCombination, row: Row) =>
  c.status === row.status && (c.rolloutStates === null || c.rolloutStates.includes(row.rolloutState)) && (c.scheduled === null || c.scheduled === (row.startAt !== null));

describe("a deployment's one state", () => {
  it("covers every stored combination (5 statuses × 9 rollout states × scheduled or not)", () => {
    expect(ROWS).toHaveLength(DEPLOYMENT_STATUSES.length * ROLLOUT_STATES.length * 2);
    for (const status of DEPLOYMENT_STATUSES) for (const s of ["unscheduled", "scheduled"] as const) expect(EXPECTED[status][s]).toHaveLength(R.length);
  });

  it.each(ROWS)("status $status, rollout $rolloutState, startAt $startAt: $expected", (row) => {
    expect(deploymentState(row)).toBe(row.expected);
    expect(deploymentState({ ...row, startAt: row.startAt === null ? null : new Date(row.startAt) })).toBe(row.expected);
  });

  it("uses every state of the vocabulary, and no other", () => {
    expect(new Set(ROWS.map((r) => r.expected))).toEqual(new Set(DEPLOYMENT_STATES));
  });

  it.each(DEPLOYMENT_STATES)("the list's filter for %s selects exactly the combinations that compute to it", (state) => {
    const combos = storedCombinations([state]);
    expect(ROWS.filter((row) => combos.some((c) => matches(c, row)))).toEqual(ROWS.filter((row) => row.expected === state));
  });

  it("in progress: a rollout that has not ended (rolling out, awaiting approval, paused), and nothing aborted, completed, failed or stopped", () => {
    expect([...IN_PROGRESS_STATES].sort()).toEqual(["awaiting_approval", "paused", "rolling_out"]);
    const combos = storedCombinations(IN_PROGRESS_STATES);
    const selected = ROWS.filter((row) => combos.some((c) => matches(c, row)));
    expect(new Set(selected.map((r) => r.status))).toEqual(new Set(["running"]));
    expect(new Set(selected.map((r) => r.rolloutState))).toEqual(new Set(["draft", "initialized", "canary", "awaiting_approval", "in_progress", "paused"]));
  });

  it("reads as words: rolling_out is 'rolling out', awaiting_approval 'awaiting approval'", () => {
    expect(DEPLOYMENT_STATES.map(deploymentStateText)).toEqual([
      "draft", "scheduled", "rolling out", "awaiting approval", "paused", "completed", "aborted", "failed", "stopping", "stopped", "deleting",
    ]);
  });
});
