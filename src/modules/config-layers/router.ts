// /api/v1/config-layers: device configuration in layers (docs/configuration.md). config:read
// reads layers, revisions and effective configurations (never a secret's value); config:write
// changes them. /effective and /preview come before /{id}: trpc-to-openapi tries routes in order.
import { z } from "zod";
import { protectedProcedure, router } from "../../trpc/procedures.js";
import { pageOf, pageOutput, pagingInput } from "../../lib/paging.js";
import { parseSelectorString } from "../devices/labels.js";
import {
  createLayerInput, effectiveOutput, layerOutput, layerSummaryOutput, listLayersInput, previewOutputItem, revisionOutput, rollbackInput, updateLayerInput,
} from "./schemas.js";
import {
  createLayer, deleteLayer, effectiveOf, getLayer, getRevision, listLayers, listRevisions, previewSelector, requestRestore, rollbackLayer, updateLayer,
} from "./service.js";
import { assertNotManaged } from "../config/guard.js";
import { acceptDrift, acceptInput, acceptOutput } from "./accept.js";
import { operatorOf } from "../deployments/rollout-router.js";
import type { Release } from "./rollout.js";

const TAG = "Configuration layers";

/** How the new revision went out, for the audit entry. */
function releaseWords(release: Release | null): string {
  if (!release) return "";
  if (release.rolloutJobId) return `; rolled out by job ${release.rolloutJobId} over ${release.rolloutDevices} devices`;
  return `; released at once${release.cancelledJobId ? `, cancelling the rollout job ${release.cancelledJobId}` : ""}`;
}
const audit = { entity: "config_layer" };
const idInput = z.object({ id: z.string().uuid() });

export const configLayersRouter = router({
  create: protectedProcedure("config:write")
    .meta({
      openapi: {
        method: "POST", path: "/config-layers", tags: [TAG],
        summary: "Create a configuration layer: the organization's default, a layer for a label selector at an order, or a device's override",
        description:
          "Its content (variables, files, secrets, activation) is revision 1. 400 naming the field: a template naming a variable no layer defines, " +
          "a file path that is not absolute, a file over 131,072 bytes (524,288 per layer). 409: a name taken, a second default or override, " +
          "another selector layer at the same order that can match the same device (both named).",
      },
      successStatus: 201,
      audit: { ...audit, action: "config-layers.create" },
    })
    .input(createLayerInput)
    .output(layerOutput)
    .mutation(async ({ ctx, input }) => {
      const layer = await createLayer(ctx.db, ctx.services.secrets, ctx.principal, input);
      if (ctx.audit) {
        ctx.audit.entityId = layer.id;
        ctx.audit.message = `${layer.kind} layer ${layer.name} created (revision 1${layer.secretNames.length ? `, secrets ${layer.secretNames.join(", ")}` : ""})`;
      }
      return layer;
    }),

  list: protectedProcedure("config:read")
    .meta({ openapi: { method: "GET", path: "/config-layers", tags: [TAG], summary: "List configuration layers", description: "By kind (device, organization, selector), then order and name. Secrets by name only." } })
    .input(listLayersInput.extend(pagingInput))
    .output(pageOutput(layerSummaryOutput))
    .query(async ({ ctx, input }) => {
      const { rows, total } = await listLayers(ctx.db, ctx.principal.organizationId, input);
      return pageOf(rows, total, input.offset);
    }),

  effective: protectedProcedure("config:read")
    .meta({
      openapi: {
        method: "GET", path: "/config-layers/effective", tags: [TAG],
        summary: "The effective configuration of a device: each variable and file with the layer and revision it came from and what it overrode",
        description: "With its revision (sha256) and what the device last reported (applied revision, state, drift). Secrets and values taking one in are named, never answered. " +
          "409 naming the layers when two at one order match the device, or the layer, key and name a template lacks.",
      },
    })
    .input(z.object({ deviceId: z.string().uuid() }))
    .output(effectiveOutput)
    .query(({ ctx, input }) => effectiveOf(ctx.db, ctx.services.secrets, ctx.principal.organizationId, input.deviceId)),

  preview: protectedProcedure("config:read")
    .meta({
      openapi: {
        method: "GET", path: "/config-layers/preview", tags: [TAG],
        summary: "Preview the configuration of the devices a label selector matches: each device's revision, or why it has none",
        description: "`labels` is a selector (key=value,key2=value2; empty: every device). By device name, paged.",
      },
    })
    .input(z.object({ labels: z.string().max(8000).optional().describe("label selector: key=value,key2=value2"), ...pagingInput }))
    .output(pageOutput(previewOutputItem))
    .query(async ({ ctx, input }) => {
      const { rows, total } = await previewSelector(ctx.db, ctx.services.secrets, ctx.principal.organizationId, parseSelectorString(input.labels), input);
      return pageOf(rows, total, input.offset);
    }),

  restore: protectedProcedure("config:write")
    .meta({
      openapi: {
        method: "POST", path: "/config-layers/restore", tags: [TAG],
        summary: "Restore the files a device reported changed by hand: its next heartbeat rewrites them from the revision in effect",
        description: "409 when the device reported no drift. POST /config-layers/accept keeps the device's values instead.",
      },
      audit: { entity: "device", action: "config-layers.restore" },
    })
    .input(z.object({ deviceId: z.string().uuid() }))
    .output(z.object({ deviceId: z.string().uuid(), paths: z.array(z.string()).describe("the drifted files it will rewrite") }))
    .mutation(async ({ ctx, input }) => {
      const result = await requestRestore(ctx.db, ctx.principal.organizationId, input.deviceId);
      if (ctx.audit) {
        ctx.audit.entityId = input.deviceId;
        ctx.audit.message = `restore ${result.paths.join(", ")}`;
      }
      return result;
    }),

  accept: protectedProcedure("config:write")
    .meta({
      openapi: {
        method: "POST", path: "/config-layers/accept", tags: [TAG],
        summary: "Accept files a device reported changed by hand as its own values: they go into the device's override layer (created if needed) as a new revision",
        description: "The device then applies that revision without rewriting the files. 409 naming the path: no drift reported, a file removed, " +
          "one over 131,072 bytes (the device sends no content), one taking in a secret, or an override layer managed as code.",
      },
      audit: { entity: "device", action: "config-layers.accept" },
    })
    .input(acceptInput)
    .output(acceptOutput)
    .mutation(async ({ ctx, input }) => {
      const result = await acceptDrift(ctx.db, ctx.services.secrets, ctx.principal, input);
      if (ctx.audit) {
        ctx.audit.entityId = input.deviceId;
        ctx.audit.message = `accept ${result.paths.join(", ")} into layer ${result.layer} (revision ${result.revision})`;
      }
      return result;
    }),

  get: protectedProcedure("config:read")
    .meta({ openapi: { method: "GET", path: "/config-layers/{id}", tags: [TAG], summary: "Get a configuration layer with the content of the revision in effect (secrets by name only)" } })
    .input(idInput)
    .output(layerOutput)
    .query(({ ctx, input }) => getLayer(ctx.db, ctx.principal.organizationId, input.id)),

  update: protectedProcedure("config:write")
    .meta({
      openapi: {
        method: "PATCH", path: "/config-layers/{id}", tags: [TAG],
        summary: "Change a configuration layer: a change of its content (variables, files, secrets, activation) is a new revision",
        description: "variables and files replace the whole set when given; secrets name only what changes (null removes one). " +
          "Name, selector, order and description change the layer itself, not its revision. The same 400/409 as create. " +
          "A new revision is released to every device at once (cancelling a live rollout of the layer first), or with `rollout` rolled out by an apply-configuration job " +
          "(answered as `rollout.jobId`; 409 naming rollout while another rollout of the layer lives). docs/configuration.md, \"Rollout\".",
      },
      audit: { ...audit, action: "config-layers.update" },
    })
    .input(updateLayerInput)
    .output(layerOutput)
    .mutation(async ({ ctx, input }) => {
      // secrets are never in a document: setting them stays open for a layer managed as code
      await assertNotManaged(ctx.db, "ConfigLayer", ctx.principal.organizationId, input.id, { input: { ...input, comment: undefined }, secretFields: ["secrets"] });
      const { layer, newRevision, release } = await updateLayer(ctx.db, ctx.services.secrets, ctx.principal, input, await operatorOf(ctx.db, ctx.principal));
      if (ctx.audit) {
        const changed = Object.keys(input).filter((k) => k !== "id" && k !== "comment" && k !== "rollout");
        ctx.audit.message = `layer ${layer.name}: ${changed.join(", ") || "nothing"} changed${newRevision ? `, revision ${layer.revision}` : ""}${releaseWords(release)}`;
      }
      return layer;
    }),

  delete: protectedProcedure("config:write")
    .meta({
      openapi: {
        method: "DELETE", path: "/config-layers/{id}", tags: [TAG], summary: "Delete a configuration layer with its revisions",
        description: "409 when another layer's template names a variable only this one defines.",
      },
      audit: { ...audit, action: "config-layers.delete" },
    })
    .input(idInput)
    .output(z.object({ id: z.string().uuid(), name: z.string(), deleted: z.literal(true) }))
    .mutation(async ({ ctx, input }) => {
      await assertNotManaged(ctx.db, "ConfigLayer", ctx.principal.organizationId, input.id);
      return deleteLayer(ctx.db, ctx.services.secrets, ctx.principal.organizationId, input.id);
    }),

  revisions: protectedProcedure("config:read")
    .meta({ openapi: { method: "GET", path: "/config-layers/{id}/revisions", tags: [TAG], summary: "A layer's revisions, newest first (secrets by name only)" } })
    .input(idInput.extend(pagingInput))
    .output(pageOutput(revisionOutput))
    .query(async ({ ctx, input }) => {
      const { rows, total } = await listRevisions(ctx.db, ctx.principal.organizationId, input.id, input);
      return pageOf(rows, total, input.offset);
    }),

  revision: protectedProcedure("config:read")
    .meta({ openapi: { method: "GET", path: "/config-layers/{id}/revisions/{revision}", tags: [TAG], summary: "One revision of a layer" } })
    .input(idInput.extend({ revision: z.coerce.number().int().min(1) }))
    .output(revisionOutput)
    .query(({ ctx, input }) => getRevision(ctx.db, ctx.principal.organizationId, input.id, input.revision)),

  rollback: protectedProcedure("config:write")
    .meta({
      openapi: {
        method: "POST", path: "/config-layers/{id}/rollback", tags: [TAG],
        summary: "Roll a layer back to an earlier revision: its content (secrets too) becomes a new revision",
        description: "400 naming the revision when the layer has none of that number; 409 when it is the newest revision. " +
          "Released at once (cancelling a live rollout of the layer), or with `rollout` rolled out by an apply-configuration job, as PATCH.",
      },
      audit: { ...audit, action: "config-layers.rollback" },
    })
    .input(rollbackInput)
    .output(layerOutput)
    .mutation(async ({ ctx, input }) => {
      await assertNotManaged(ctx.db, "ConfigLayer", ctx.principal.organizationId, input.id);
      const { layer, release } = await rollbackLayer(ctx.db, ctx.services.secrets, ctx.principal, input, await operatorOf(ctx.db, ctx.principal));
      if (ctx.audit) ctx.audit.message = `layer ${layer.name} rolled back to revision ${input.revision} (as revision ${layer.revision})${releaseWords(release)}`;
      return layer;
    }),
});
