// /api/v1/deployments/{id}/rollout: the staged rollout's status and the operator's moves.
// Every move locks the deployment, checks the current state, and answers 409 naming it when
// the move is not allowed from there.
import { z } from "zod";
import { protectedProcedure, router } from "../../trpc/procedures.js";
import type { DbTx } from "../../db/client.js";
import type { Principal } from "../../trpc/principal.js";
import { eventsOf, type DeploymentEvents } from "./events.js";
import { abortRollout, advanceRollout, initializeRollout, pauseRollout, resumeRollout, retryFailedRollout, startRollout } from "./rollout.js";
import { rolloutStatus } from "./rollout-status.js";
import { idInput, rolloutOutput } from "./schemas.js";
import { findDeployment, lockDeployment, type DeploymentRow } from "./store.js";

const TAG = "Rollouts";
const audit = { entity: "deployment" };
const reasonInput = z.object({ id: z.uuid(), reason: z.string().trim().min(1).max(500).optional().describe("recorded as the rollout's reason") });

type Move = (db: DbTx, row: DeploymentRow, events: DeploymentEvents, input: { reason?: string }, by: string) => Promise<DeploymentRow>;

/** Who made a move, as the rollout records it: the person's e-mail address (and the API key they used). */
export async function operatorOf(db: DbTx, principal: Principal): Promise<string> {
  const [user, key] = await Promise.all([
    db.user.findUnique({ where: { id: principal.userId }, select: { email: true } }),
    principal.apiKeyId ? db.apiKey.findUnique({ where: { id: principal.apiKeyId }, select: { name: true } }) : null,
  ]);
  return `${user?.email ?? "an unknown user"}${key ? ` (API key ${key.name})` : ""}`;
}

function move(path: string, summary: string, description: string, apply: Move, input: typeof idInput | typeof reasonInput = idInput) {
  return protectedProcedure("deployments:write")
    .meta({ openapi: { method: "POST", path: `/deployments/{id}/rollout/${path}`, tags: [TAG], summary, description }, audit: { ...audit, action: `deployments.rollout.${path}` } })
    .input(input)
    .output(rolloutOutput)
    .mutation(async ({ ctx, input: given }) => {
      const events = eventsOf(ctx);
      const row = await lockDeployment(ctx.db, ctx.principal.organizationId, given.id);
      const moved = await apply(ctx.db, row, events, given as { reason?: string }, await operatorOf(ctx.db, ctx.principal));
      return rolloutStatus(ctx.db, moved);
    });
}

export const rolloutRouter = router({
  status: protectedProcedure("deployments:read")
    .meta({
      openapi: {
        method: "GET", path: "/deployments/{id}/rollout", tags: [TAG],
        summary: "Rollout status: state, current batch, per-batch device counts, thresholds and timestamps",
        description: "409 for an all-at-once deployment (it has no staged rollout).",
      },
    })
    .input(idInput)
    .output(rolloutOutput)
    .query(async ({ ctx, input }) => rolloutStatus(ctx.db, await findDeployment(ctx.db, ctx.principal.organizationId, input.id))),

  initialize: move(
    "initialize", "Initialize the rollout: freeze the device set and plan the canary and the batches",
    "From draft or initialized (plans again). 409 when no targeted device is eligible.",
    (db, row, events) => initializeRollout(db, row, events),
  ),
  start: move("start", "Start the rollout: the canary batch is dispatched", "From initialized.", (db, row, events) => startRollout(db, row, events)),
  promote: move(
    "promote", "Promote: accept the batch in flight as it is and dispatch the next batch",
    "From canary (before it reached its threshold: the operator's call), awaiting_approval of the canary, or paused (the paused batch as it is). "
      + "A batch below its success target is recorded as promoted, naming the operator and its counts; the rollout's completion reason says so.",
    (db, row, events, _input, by) => advanceRollout(db, row, "promote", events, by),
  ),
  approve: move(
    "approve", "Approve the next batch", "From awaiting_approval: the batch that succeeded is accepted and the next one dispatched (or the rollout completes).",
    (db, row, events, _input, by) => advanceRollout(db, row, "approve", events, by),
  ),
  pause: move(
    "pause", "Pause: in-flight devices finish, nothing new is dispatched", "From canary, awaiting_approval or in_progress.",
    (db, row, events, input, by) => pauseRollout(db, row, input.reason ?? `paused by ${by}`, events), reasonInput,
  ),
  resume: move(
    "resume", "Resume a paused rollout",
    "Back to the state it paused from. The batch in flight gets a fresh timeout; failures that paused it are accepted (it is judged on its success threshold).",
    (db, row, events, _input, by) => resumeRollout(db, row, events, by),
  ),
  retryFailed: move(
    "retry-failed", "Retry the failed devices of the batch in flight",
    "From canary, in_progress or paused with a batch in flight: its failed devices (and those waiting for an automatic retry) get their next attempt now, "
      + "the batch a fresh timeout, and the failure threshold watches it again; a paused rollout resumes. 409 when none of its devices failed.",
    (db, row, events, _input, by) => retryFailedRollout(db, row, events, by),
  ),
  abort: move(
    "abort", "Abort: nothing new is dispatched and devices that have not started are cancelled",
    "Devices already installing or running keep it; stop the deployment to remove it from them.",
    (db, row, events, input, by) => abortRollout(db, row, input.reason ?? `aborted by ${by}`, events, by), reasonInput,
  ),
});
