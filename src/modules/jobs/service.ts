// Jobs: one device action over the devices of a target, created as one DeviceAction per device
// (so each device's result, the heartbeat's hand-over and the agent's at-most-once are those of
// device actions: docs/actions.md), dispatched batch by batch and judged by progress.ts.
import { Prisma } from "../../generated/prisma/client.js";
import type { DbTx } from "../../db/client.js";
import type { Principal } from "../../trpc/principal.js";
import { conflict, invalidField, notFound } from "../../trpc/errors.js";
import { APP_KINDS, BUDGETED_KINDS, CONFIGURATION_KIND, type ActionKind } from "../device-actions/kinds.js";
import { successTarget } from "../deployments/rollout-machine.js";
import type { PlannedBatch } from "../deployments/batch-plan.js";
import { dispatchJobBatch, freezeJobTargets, planJobBatches, previewTargets } from "./targets.js";
import { countsOfJobs, emptyCounts, findJobRow, jobCounts, judgeJob, lockJob, type JobRow } from "./progress.js";
import type { CreateJobInput, JobDto, JobPreview, JobState, JobStrategy } from "./schemas.js";

const isoNullable = (d: Date | null) => (d ? d.toISOString() : null);

export async function toJobDto(db: DbTx, row: JobRow): Promise<JobDto> {
  return jobDto(row, await jobCounts(db, row.id));
}

function jobDto(row: JobRow, { total, perBatch }: Awaited<ReturnType<typeof jobCounts>>): JobDto {
  const strategy = row.strategy as JobStrategy;
  return {
    id: row.id,
    kind: row.kind as JobDto["kind"],
    deploymentId: row.deploymentId,
    applicationId: row.applicationId,
    configLayerId: row.configLayerId,
    configRevision: row.configRevision,
    reason: row.reason,
    target: row.target as JobDto["target"],
    strategy,
    maintenanceWindows: (row.maintenanceWindows ?? null) as JobDto["maintenanceWindows"],
    disruptionBudget: (row.disruptionBudget ?? null) as JobDto["disruptionBudget"],
    state: row.state as JobState,
    stateReason: row.stateReason,
    currentBatch: row.currentBatch,
    eligible: row.eligible,
    skipped: row.skipped,
    counts: total,
    batches: (row.batches as unknown as PlannedBatch[]).map((b) => ({
      ...b, successTarget: successTarget(b.size, strategy.successThreshold), counts: perBatch.get(b.index) ?? emptyCounts(),
    })),
    expiresAt: row.expiresAt.toISOString(),
    createdById: row.createdById,
    createdAt: row.createdAt.toISOString(),
    completedAt: isoNullable(row.completedAt),
  };
}

/** The application an *-app job acts on, from its deployment (400 naming the field otherwise). */
async function applicationOf(db: DbTx, organizationId: string, input: Pick<CreateJobInput, "kind" | "deploymentId">): Promise<string | null> {
  if (!APP_KINDS.includes(input.kind)) {
    if (input.deploymentId) throw invalidField("deploymentId", `deploymentId: ${input.kind} acts on the whole device and names no deployment`);
    return null;
  }
  if (!input.deploymentId) throw invalidField("deploymentId", `deploymentId: ${input.kind} names the deployment whose application it acts on`);
  const deployment = await db.deployment.findFirst({ where: { id: input.deploymentId, organizationId }, select: { applicationId: true } });
  if (!deployment) throw invalidField("deploymentId", "deploymentId: no such deployment in your organization");
  return deployment.applicationId;
}

export async function previewJob(db: DbTx, organizationId: string, input: Pick<CreateJobInput, "kind" | "target" | "deploymentId" | "strategy">): Promise<JobPreview> {
  await applicationOf(db, organizationId, input);
  return previewTargets(db, organizationId, input.target, input, input.strategy);
}

/** A budget paces what disrupts: a kind that disrupts nothing takes none (400 naming the field). */
function checkBudget(input: { kind: ActionKind; disruptionBudget?: unknown }) {
  if (input.disruptionBudget && !BUDGETED_KINDS.includes(input.kind)) {
    throw invalidField("disruptionBudget", `disruptionBudget: ${input.kind} disrupts nothing; a budget paces the disruptive kinds and a configuration's rollout (${BUDGETED_KINDS.join(", ")})`);
  }
}

/** A job as created: an operator's (CreateJobInput), or a configuration layer's rollout (kind apply-configuration, with its layer and revision). */
export type NewJob = Omit<CreateJobInput, "kind"> & ({ kind: CreateJobInput["kind"]; configuration?: undefined } | { kind: typeof CONFIGURATION_KIND; configuration: { layerId: string; revision: number } });

/** Creates the job, freezes its devices, plans its batches and dispatches the canary: one transaction. */
export async function createJob(db: DbTx, principal: Principal, input: NewJob): Promise<JobDto> {
  const { organizationId } = principal;
  checkBudget(input);
  const applicationId = input.kind === CONFIGURATION_KIND ? null : await applicationOf(db, organizationId, input);
  const job = await db.actionJob.create({
    data: {
      organizationId, kind: input.kind, deploymentId: input.deploymentId ?? null, applicationId, reason: input.reason ?? null,
      configLayerId: input.configuration?.layerId ?? null, configRevision: input.configuration?.revision ?? null,
      target: input.target, strategy: input.strategy, expiresAt: new Date(Date.now() + input.expiresInSeconds * 1000),
      maintenanceWindows: input.maintenanceWindows ?? Prisma.DbNull, disruptionBudget: input.disruptionBudget ?? Prisma.DbNull,
      createdById: principal.apiKeyId ?? principal.userId,
    },
  });
  const frozen = await freezeJobTargets(db, { ...job, kind: input.kind }, input.target);
  // the caller's transaction rolls the job back with this refusal
  if (frozen.eligible === 0) throw conflict(`The target matches no device that can run it (${frozen.skipped} skipped); nothing to do`);
  const plan = await planJobBatches(db, job.id, input.strategy, frozen.eligible);
  await dispatchJobBatch(db, job, 0);
  const row = await db.actionJob.update({
    where: { id: job.id },
    data: { batches: plan as object[], currentBatch: 0, eligible: frozen.eligible, skipped: frozen.skipped, stateReason: `planned ${plan.length} batches over ${frozen.eligible} devices; canary dispatched` },
  });
  return toJobDto(db, row);
}

export async function getJob(db: DbTx, organizationId: string, id: string): Promise<JobDto> {
  const row = await findJobRow(db, organizationId, id);
  if (!row) throw notFound("Job");
  return toJobDto(db, row);
}

export async function listJobs(db: DbTx, organizationId: string, filter: { state?: string[]; kind?: string[]; limit: number; offset: number }) {
  const where = {
    organizationId,
    ...(filter.state?.length ? { state: { in: filter.state } } : {}),
    ...(filter.kind?.length ? { kind: { in: filter.kind } } : {}),
  };
  const [rows, total] = await Promise.all([
    db.actionJob.findMany({ where, orderBy: [{ createdAt: "desc" }, { id: "desc" }], take: filter.limit, skip: filter.offset }),
    db.actionJob.count({ where }),
  ]);
  const counts = await countsOfJobs(db, rows.map((r) => r.id));
  return { rows: rows.map((r) => jobDto(r, counts.get(r.id)!)), total };
}

function refuse(move: string, job: JobRow, allowed: readonly string[]): never {
  throw conflict(`Cannot ${move} the job: it is ${job.state} (allowed while ${allowed.join(" or ")})`);
}

/** pause: devices already handed it finish; no further batch is dispatched. */
export async function pauseJob(db: DbTx, organizationId: string, id: string, reason: string): Promise<JobDto> {
  const job = await lockJob(db, organizationId, id);
  if (job.state !== "in_progress") refuse("pause", job, ["in_progress"]);
  return toJobDto(db, await db.actionJob.update({ where: { id }, data: { state: "paused", stateReason: reason } }));
}

/** resume: the batch in flight is accepted with its failures (judged on its success target, or as it is when all its devices are done). */
export async function resumeJob(db: DbTx, organizationId: string, id: string, by: string): Promise<JobDto> {
  const job = await lockJob(db, organizationId, id);
  if (job.state !== "paused") refuse("resume", job, ["paused"]);
  const resumed = await db.actionJob.update({ where: { id }, data: { state: "in_progress", failureAccepted: true, stateReason: `resumed by ${by}` } });
  return toJobDto(db, await judgeJob(db, resumed));
}

/**
 * cancel: devices that have not begun it (queued, pending, deferred by a lease) are cancelled;
 * those running it finish. A configuration's rollout has nothing a device runs: its handed
 * (delivered) devices are cancelled too, and get the released revision again.
 */
export async function cancelJob(db: DbTx, organizationId: string, id: string, reason: string): Promise<JobDto> {
  const job = await lockJob(db, organizationId, id);
  if (job.state !== "in_progress" && job.state !== "paused") refuse("cancel", job, ["in_progress", "paused"]);
  const open = job.kind === CONFIGURATION_KIND ? ["queued", "pending", "deferred", "delivered"] : ["queued", "pending", "deferred"];
  await db.$executeRaw`
    UPDATE "DeviceAction" SET "state" = 'cancelled', "finishedAt" = (now() AT TIME ZONE 'UTC'), "updatedAt" = (now() AT TIME ZONE 'UTC'), "message" = 'the job was cancelled'
     WHERE "jobId" = ${id}::uuid AND "state" IN (SELECT jsonb_array_elements_text(${JSON.stringify(open)}::jsonb))`;
  return toJobDto(db, await db.actionJob.update({ where: { id }, data: { state: "cancelled", stateReason: reason, completedAt: new Date() } }));
}

/** Judges one job in its own transaction's lock (the heartbeat's reports and the tick). */
export async function judgeJobById(db: DbTx, organizationId: string, id: string): Promise<void> {
  await judgeJob(db, await lockJob(db, organizationId, id));
}
