// /api/v1/jobs: one device action over the devices of a label selector or a device list, as a
// job rolled out in batches (a canary first, success and failure thresholds, pause, resume,
// cancel, an expiry). actions:write creates and moves jobs; the kinds that change what runs
// (DISRUPTIVE_KINDS) need actions:disruptive as well, as one device's action does.
import { protectedProcedure, router } from "../../trpc/procedures.js";
import { pageOf, pageOutput } from "../../lib/paging.js";
import { requireDisruptive } from "../device-actions/disruptive.js";
import { CONFIGURATION_KIND } from "../device-actions/kinds.js";
import { denyAccess } from "../../trpc/procedures.js";
import { can, type Principal } from "../../trpc/principal.js";
import type { Context } from "../../trpc/context.js";
import { operatorOf } from "../deployments/rollout-router.js";
import { createJobInput, jobIdInput, jobMoveInput, jobOutput, listJobsInput, previewJobInput, previewOutput } from "./schemas.js";
import { cancelJob, createJob, getJob, listJobs, pauseJob, previewJob, resumeJob } from "./service.js";

const TAG = "Jobs";

/**
 * A configuration layer's rollout (kind apply-configuration) is moved with config:write as well,
 * the permission that started it (config-layers' PATCH): refused and audited as requireDisruptive does.
 */
async function requireKindPermission(ctx: Pick<Context, "db" | "services" | "request"> & { principal: Principal }, id: string, path: string): Promise<void> {
  const job = await ctx.db.actionJob.findFirst({ where: { id, organizationId: ctx.principal.organizationId }, select: { kind: true } });
  if (job?.kind === CONFIGURATION_KIND && !can(ctx.principal, "config:write")) {
    await denyAccess(ctx, ctx.principal, path, "Missing permission config:write (the job rolls out a configuration layer)");
  }
}
const audit = { entity: "action_job" };

export const jobsRouter = router({
  create: protectedProcedure("actions:write")
    .meta({
      openapi: {
        method: "POST", path: "/jobs", tags: [TAG],
        summary: "Run a device action over the devices of a label selector or a device list, in batches",
        description:
          "The target is resolved now: one action per device (skipped with the reason when it cannot run it). The canary is dispatched at once; " +
          "each next batch once the one before reached its success threshold; failed or expired devices reaching the failure threshold pause the job. " +
          "Devices run it at most once, and only before expiresAt. Disruptive kinds need actions:disruptive (403). 409 when no targeted device can run it. docs/actions.md.",
      },
      successStatus: 201,
      audit: { ...audit, action: "jobs.create" },
    })
    .input(createJobInput)
    .output(jobOutput)
    .mutation(async ({ ctx, input, path }) => {
      await requireDisruptive(ctx, input.kind, path);
      const job = await createJob(ctx.db, ctx.principal, input);
      if (ctx.audit) {
        ctx.audit.entityId = job.id;
        ctx.audit.message = `${input.kind} job over ${job.eligible} devices (${job.skipped} skipped)${input.reason ? `: ${input.reason}` : ""}`;
      }
      return job;
    }),

  preview: protectedProcedure("actions:read")
    .meta({
      openapi: {
        method: "POST", path: "/jobs/preview", tags: [TAG],
        summary: "What a job would take: matched, eligible, skipped and offline devices, and its batches; changes nothing",
      },
    })
    .input(previewJobInput)
    .output(previewOutput)
    .mutation(({ ctx, input }) => previewJob(ctx.db, ctx.principal.organizationId, input)),

  list: protectedProcedure("actions:read")
    .meta({ openapi: { method: "GET", path: "/jobs", tags: [TAG], summary: "List jobs with their progress, newest first", description: "`state` and `kind` may repeat." } })
    .input(listJobsInput)
    .output(pageOutput(jobOutput))
    .query(async ({ ctx, input }) => {
      const { rows, total } = await listJobs(ctx.db, ctx.principal.organizationId, input);
      return pageOf(rows, total, input.offset);
    }),

  get: protectedProcedure("actions:read")
    .meta({
      openapi: {
        method: "GET", path: "/jobs/{id}", tags: [TAG],
        summary: "A job's state, its reason and its devices' counts per state, overall and per batch",
        description: "Each device's result: GET /device-actions?jobId={id}.",
      },
    })
    .input(jobIdInput)
    .output(jobOutput)
    .query(({ ctx, input }) => getJob(ctx.db, ctx.principal.organizationId, input.id)),

  pause: protectedProcedure("actions:write")
    .meta({
      openapi: { method: "POST", path: "/jobs/{id}/pause", tags: [TAG], summary: "Pause a job: devices already handed it finish, no further batch is dispatched", description: "From in_progress; 409 naming the state otherwise." },
      audit: { ...audit, action: "jobs.pause" },
    })
    .input(jobMoveInput)
    .output(jobOutput)
    .mutation(async ({ ctx, input, path }) => {
      await requireKindPermission(ctx, input.id, path);
      return pauseJob(ctx.db, ctx.principal.organizationId, input.id, input.reason ?? `paused by ${await operatorOf(ctx.db, ctx.principal)}`);
    }),

  resume: protectedProcedure("actions:write")
    .meta({
      openapi: {
        method: "POST", path: "/jobs/{id}/resume", tags: [TAG], summary: "Resume a paused job",
        description: "The batch in flight is accepted with its failures: the next batch follows once it reached its success target, or at once when all its devices are done. From paused; 409 otherwise.",
      },
      audit: { ...audit, action: "jobs.resume" },
    })
    .input(jobIdInput)
    .output(jobOutput)
    .mutation(async ({ ctx, input, path }) => {
      await requireKindPermission(ctx, input.id, path);
      return resumeJob(ctx.db, ctx.principal.organizationId, input.id, await operatorOf(ctx.db, ctx.principal));
    }),

  cancel: protectedProcedure("actions:write")
    .meta({
      openapi: {
        method: "POST", path: "/jobs/{id}/cancel", tags: [TAG], summary: "Cancel a job: devices that have not begun it never will",
        description: "Queued, pending and deferred actions are cancelled; those the device began finish. From in_progress or paused; 409 otherwise.",
      },
      audit: { ...audit, action: "jobs.cancel" },
    })
    .input(jobMoveInput)
    .output(jobOutput)
    .mutation(async ({ ctx, input, path }) => {
      await requireKindPermission(ctx, input.id, path);
      return cancelJob(ctx.db, ctx.principal.organizationId, input.id, input.reason ?? `cancelled by ${await operatorOf(ctx.db, ctx.principal)}`);
    }),
});
