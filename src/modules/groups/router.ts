// /api/v1/groups: device groups defined by labels. Static paths come before {param} paths
// (trpc-to-openapi matches in router order).
import { z } from "zod";
import { protectedProcedure, router } from "../../trpc/procedures.js";
import { pagingInput, pageOutput } from "../../lib/paging.js";
import { deviceAuthCacheOf } from "../../trpc/device-auth.js";
import { actorOf } from "../devices/activity.js";
import { anyKeyInPath } from "../devices/labels.js";
import {
  bulkDeleteInput,
  bulkDeleteOutput,
  bulkLabelInput,
  bulkLabelOutput,
  eligibilityInput,
  eligibilityOutput,
  fleetStatsOutput,
  groupQueryInput,
  groupQueryOutput,
  groupsByLabelOutput,
  labelKeyOutput,
  labelValuesOutput,
  statsSelector,
} from "./schemas.js";
import { bulkDeleteDevices, bulkUpdateLabels, eligibility, fleetStats, groupsByLabel, labelKeys, labelValues, statsBySelector } from "./service.js";

const TAG = "Groups";

export const groupsRouter = router({
  stats: protectedProcedure("devices:read")
    .meta({ openapi: { method: "GET", path: "/groups/stats", tags: [TAG], summary: "Fleet statistics: devices by status, unlabeled devices, label keys in use" } })
    .input(z.object({}))
    .output(fleetStatsOutput)
    .query(({ ctx }) => fleetStats(ctx.db, ctx.principal.organizationId)),

  labelKeys: protectedProcedure("devices:read")
    .meta({ openapi: { method: "GET", path: "/groups/label-keys", tags: [TAG], summary: "Label keys in use, with how many devices carry each and how many values it has" } })
    .input(z.object({ ...pagingInput }))
    .output(pageOutput(labelKeyOutput))
    .query(async ({ ctx, input }) => {
      const { items, total } = await labelKeys(ctx.db, ctx.principal.organizationId, input);
      return { items, total, hasMore: input.offset + items.length < total };
    }),

  labelValues: protectedProcedure("devices:read")
    .meta({ openapi: { method: "GET", path: "/groups/label-keys/{key}/values", tags: [TAG], summary: "Values of one label key with their device counts, largest first" } })
    .input(z.object({ key: anyKeyInPath, ...pagingInput }))
    .output(labelValuesOutput)
    .query(({ ctx, input }) => labelValues(ctx.db, ctx.principal.organizationId, input.key, input)),

  statsByQuery: protectedProcedure("devices:read")
    .meta({
      openapi: {
        method: "GET",
        path: "/groups/query",
        tags: [TAG],
        summary: "Statistics of the devices matching the query parameters as a label selector",
        description: "Every query parameter is a label: `GET /groups/query?site=berlin&tier=core` counts the devices labelled site=berlin AND tier=core. Same answer as POST /groups/query.",
      },
    })
    // Any parameter name is a label key, so the object is open (catchall).
    .input(z.object({}).catchall(z.string().max(1024)))
    .output(groupQueryOutput)
    .query(async ({ ctx, input }) => {
      const selector = statsSelector.parse(input);
      return { ...(await statsBySelector(ctx.db, ctx.principal.organizationId, selector)), labelSelector: selector };
    }),

  query: protectedProcedure("devices:read")
    .meta({
      openapi: {
        method: "POST",
        path: "/groups/query",
        tags: [TAG],
        summary: "Statistics of the devices matching a label selector (spec op 12)",
        description: "AND semantics: a device matches when it carries every pair. byStatus always has online, offline, pending and error, plus provisioned.",
      },
    })
    .input(groupQueryInput)
    .output(groupQueryOutput)
    // A read, although a POST: no audit entry, no transaction.
    .query(async ({ ctx, input }) => ({
      ...(await statsBySelector(ctx.db, ctx.principal.organizationId, input.labelSelector)),
      labelSelector: input.labelSelector,
    })),

  eligibility: protectedProcedure("devices:read")
    .meta({
      openapi: {
        method: "POST",
        path: "/groups/eligibility",
        tags: [TAG],
        summary: "How many devices a target matches and how many of them a deployment profile can run on",
        description:
          "The rule a deployment applies when it starts: a profile that names architectures runs on devices whose reported architecture is one of them, read as manifests name them (x86_64 is amd64, aarch64 arm64, armv7 and armv7l arm); a device that has not reported one is skipped. Without `architectures` every matched device is eligible.",
      },
    })
    .input(eligibilityInput)
    .output(eligibilityOutput)
    // A read, although a POST: no audit entry, no transaction.
    .query(({ ctx, input }) => eligibility(ctx.db, ctx.principal.organizationId, input, input.architectures, input.systemImage ?? false)),

  byLabel: protectedProcedure("devices:read")
    .meta({
      openapi: {
        method: "GET",
        path: "/groups/by-label/{key}",
        tags: [TAG],
        summary: "Devices grouped by the values of one label key (spec op 14)",
        description: "One group per value, largest first, each with its status breakdown; total counts the devices across all groups. An unknown key answers no groups and total 0.",
      },
    })
    .input(z.object({ key: anyKeyInPath }))
    .output(groupsByLabelOutput)
    .query(({ ctx, input }) => groupsByLabel(ctx.services.database.opened.raw, ctx.principal.organizationId, input.key)),

  bulkLabels: protectedProcedure("devices:write")
    .meta({
      openapi: {
        method: "POST",
        path: "/groups/labels/bulk",
        tags: [TAG],
        summary: "Add, change and remove labels on every device matched by a selector or an id list",
        description: "One statement for the whole group. `set` adds or overwrites, `remove` deletes keys. Each changed device gets an activity entry.",
      },
      audit: { entity: "device_group", action: "groups.labels.bulk" },
    })
    .input(bulkLabelInput)
    .output(bulkLabelOutput)
    .mutation(({ ctx, input }) =>
      bulkUpdateLabels(ctx.db, actorOf(ctx.principal), ctx.principal.organizationId, input, input.set, input.remove),
    ),

  bulkDelete: protectedProcedure("devices:write")
    .meta({
      openapi: {
        method: "POST",
        path: "/groups/devices/bulk-delete",
        tags: [TAG],
        summary: "Delete every device matched by a selector or an id list, revoking their certificates",
      },
      audit: { entity: "device_group", action: "groups.devices.bulk-delete" },
      mcp: { destructive: true },
    })
    .input(bulkDeleteInput)
    .output(bulkDeleteOutput)
    .mutation(async ({ ctx, input }) => {
      const { deleted, revokedCertificates, ids } = await bulkDeleteDevices(ctx.db, ctx.principal.organizationId, input);
      deviceAuthCacheOf(ctx.services).evictDevices(ids);
      return { deleted, revokedCertificates };
    }),
});
