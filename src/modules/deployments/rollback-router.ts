// Rollback of devices and of label groups, the rollback target, and each device's version history.
import { z } from "zod";
import { pageOutput, pagingInput } from "../../lib/paging.js";
import { protectedProcedure, router } from "../../trpc/procedures.js";
import { groupRollbackInput } from "./schemas.js";
import { applicationOfDevice, deploymentHistory, noTargetReason, rollBack, rollbackCandidates } from "./rollback.js";
import { eventsOf } from "./events.js";
import { conflict } from "../../trpc/errors.js";

const TAG = "Rollback";
const NO_HISTORY = "no other version of the application ran successfully on this device";
const audit = { entity: "device" };

const outcome = z.object({
  deviceId: z.string(),
  deviceName: z.string(),
  status: z.enum(["rolled_back", "no_target"]),
  fromVersion: z.string().nullable(),
  toVersion: z.string().nullable(),
  deploymentId: z.string().nullable().describe("the rollback deployment that carries the device back"),
  reason: z.string().nullable(),
});

const targetOutput = z.object({
  deviceId: z.string(),
  applicationId: z.string(),
  currentVersion: z.string().nullable().describe("the version the device runs (or last ran): a version it was told to install counts once it reported it running"),
  pendingVersion: z.string().nullable().describe("a version the device is told to install and has not reported running yet (an upgrade or a rollback on its way)"),
  targetVersion: z.string().nullable().describe("null: nothing to roll back to"),
  targetProfileId: z.string().nullable(),
  available: z.boolean(),
});

const historyItem = z.object({
  id: z.string(),
  deploymentId: z.string().nullable(),
  deploymentName: z.string().nullable(),
  applicationId: z.string(),
  applicationName: z.string().nullable().describe("null when the application was deleted since"),
  applicationVersionId: z.string().nullable(),
  version: z.string(),
  profileId: z.string(),
  outcome: z.enum(["running", "failed"]),
  attempt: z.number().int().describe("the install attempt (1 = the first; automatic retries count up): one entry per attempt"),
  succeeded: z.boolean(),
  message: z.string().nullable(),
  startedAt: z.string(),
  finishedAt: z.string(),
});

const deviceRollbackInput = z.object({
  id: z.uuid(),
  applicationId: z.uuid().optional().describe("needed when the device ran several applications"),
});

export const rollbackRouter = router({
  device: protectedProcedure("deployments:write")
    .meta({
      openapi: {
        method: "POST", path: "/devices/{id}/rollback", tags: [TAG],
        summary: "Roll a device back to the last version of the application that ran successfully on it",
        description: "Creates and starts an all-at-once rollback deployment of that version for this device (it supersedes the current one). 409 when there is no such version.",
      },
      audit: { ...audit, action: "devices.rollback" },
    })
    .input(deviceRollbackInput)
    .output(outcome)
    .mutation(async ({ ctx, input }) => {
      const org = ctx.principal.organizationId;
      const applicationId = await applicationOfDevice(ctx.db, org, input.id, input.applicationId);
      const [candidate] = await rollbackCandidates(ctx.db, org, { deviceIds: [input.id] }, applicationId);
      if (!candidate?.targetVersionId) {
        throw conflict(`No version to roll back to: ${candidate ? noTargetReason(candidate) : NO_HISTORY} (current: ${candidate?.currentVersion ?? "none"})`);
      }
      const [result] = await rollBack(ctx.db, org, ctx.principal.userId, applicationId, [candidate], eventsOf(ctx));
      if (result.status !== "rolled_back") throw conflict(`No version to roll back to: ${result.reason}`);
      return result;
    }),

  target: protectedProcedure("deployments:read")
    .meta({
      openapi: {
        method: "GET", path: "/devices/{id}/rollback-target", tags: [TAG],
        summary: "The version a rollback would return the device to (changes nothing)",
      },
    })
    .input(deviceRollbackInput)
    .output(targetOutput)
    .query(async ({ ctx, input }) => {
      const org = ctx.principal.organizationId;
      const applicationId = await applicationOfDevice(ctx.db, org, input.id, input.applicationId);
      const [candidate] = await rollbackCandidates(ctx.db, org, { deviceIds: [input.id] }, applicationId);
      return {
        deviceId: input.id,
        applicationId,
        currentVersion: candidate?.currentVersion ?? null,
        pendingVersion: candidate?.pendingVersion ?? null,
        targetVersion: candidate?.targetVersion ?? null,
        targetProfileId: candidate?.targetProfileId ?? null,
        available: Boolean(candidate?.targetVersionId),
      };
    }),

  history: protectedProcedure("deployments:read")
    .meta({
      openapi: {
        method: "GET", path: "/devices/{id}/deployment-history", tags: [TAG],
        summary: "Every version the device ran (per deployment) and whether it ran successfully, newest first",
      },
    })
    .input(z.object({ id: z.uuid(), applicationId: z.uuid().optional(), ...pagingInput }))
    .output(pageOutput(historyItem))
    .query(({ ctx, input }) => deploymentHistory(ctx.db, ctx.principal.organizationId, input.id, input)),

  group: protectedProcedure("deployments:write")
    .meta({
      openapi: {
        method: "POST", path: "/groups/rollback", tags: [TAG],
        summary: "Roll back every device matched by a selector (or an id list) to its last version that ran successfully",
        description:
          "Body: labelSelector or deviceIds, applicationId, dryRun. Reports per device (rolled_back with the rollback deployment, " +
          "or no_target with the reason). Devices that never ran the application are not listed. dryRun answers the same without changing anything.",
      },
      audit: { ...audit, action: "groups.rollback" },
    })
    .input(groupRollbackInput)
    .output(z.object({ matched: z.number().int(), rolledBack: z.number().int(), withoutTarget: z.number().int(), dryRun: z.boolean(), devices: z.array(outcome) }))
    .mutation(async ({ ctx, input }) => {
      const org = ctx.principal.organizationId;
      const target = input.labelSelector ? { labelSelector: input.labelSelector } : { deviceIds: input.deviceIds! };
      const candidates = await rollbackCandidates(ctx.db, org, target, input.applicationId);
      const devices = await rollBack(ctx.db, org, ctx.principal.userId, input.applicationId, candidates, eventsOf(ctx), { dryRun: input.dryRun });
      const rolledBack = devices.filter((d) => d.status === "rolled_back").length;
      return { matched: devices.length, rolledBack, withoutTarget: devices.length - rolledBack, dryRun: input.dryRun, devices };
    }),
});
