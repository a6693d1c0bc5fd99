// /api/v1/notification-targets: where alert notifications go.
import { z } from "zod";
import { protectedProcedure, router, type AuthedContext } from "../../trpc/procedures.js";
import { writeAudit } from "../../trpc/audit.js";
import type { DbTx } from "../../db/client.js";
import { createdTargetOutput, createTargetInput, listTargetsInput, targetOutput, targetPageOutput, updateTargetInput } from "./schemas.js";
import { deliveryPageOutput, listDeliveriesInput } from "../alerts/schemas.js";
import { checkTargetUrl, createTarget, deleteTarget, findTarget, listTargetDeliveries, listTargets, testTarget, toDto, updateTarget } from "./service.js";
import { assertNotManaged } from "../config/guard.js";

const TAG = "Notification targets";
const audit = { entity: "notification_target" };
const idInput = z.object({ id: z.uuid() });

/**
 * Create and update write their own audit entry (meta.audit false), in one transaction with
 * the change like every mutation, because the generic entry would record the URL in full and
 * a Slack webhook URL is a credential. The entry keeps the masked URL.
 */
async function auditedWithMaskedUrl<T extends { id: string; url: string | null }>(
  ctx: AuthedContext, action: string, input: Record<string, unknown>, change: (db: DbTx) => Promise<T>,
): Promise<T> {
  return ctx.services.prisma.$transaction(async (tx) => {
    const result = await change(tx);
    const { secret: _secret, ...rest } = input;
    await writeAudit(tx, ctx.request, ctx.principal, {
      action, outcome: "success", entityType: audit.entity, entityId: result.id,
      changes: { ...rest, ...(input.url !== undefined ? { url: result.url } : {}), ...(_secret !== undefined ? { secret: "[redacted]" } : {}) },
    });
    return result;
  });
}

export const notificationTargetsRouter = router({
  list: protectedProcedure("alerts:read")
    .meta({ openapi: { method: "GET", path: "/notification-targets", tags: [TAG], summary: "List notification targets, newest first" } })
    .input(listTargetsInput)
    .output(targetPageOutput)
    .query(({ ctx, input }) => listTargets(ctx.db, ctx.services, ctx.principal.organizationId, input)),

  create: protectedProcedure("alerts:write")
    .meta({
      openapi: {
        method: "POST", path: "/notification-targets", tags: [TAG],
        summary: "Create a notification target",
        description:
          "type webhook { url, secret? } (JSON POST with X-Signature: sha256=<hex HMAC-SHA256 of the body with the secret>; a secret is " +
          "generated and returned once when absent), slack { url } (Slack-compatible incoming webhook), email { recipients } (needs SMTP_URL). " +
          "URLs must pass the outbound address policy: link-local and cloud metadata addresses are always refused, loopback and private " +
          "ranges when OUTBOUND_ALLOW_PRIVATE_NETWORKS=false. URLs and secrets are encrypted at rest and never returned in full.",
      },
      successStatus: 201,
      audit: false,
    })
    .input(createTargetInput)
    .output(createdTargetOutput)
    .mutation(async ({ ctx, input }) => {
      if (input.url) await checkTargetUrl(ctx.services, input.url); // before the transaction: it may wait for DNS
      return auditedWithMaskedUrl(ctx, "notificationTargets.create", input, (db) => createTarget(db, ctx.services, ctx.principal.organizationId, input));
    }),

  get: protectedProcedure("alerts:read")
    .meta({ openapi: { method: "GET", path: "/notification-targets/{id}", tags: [TAG], summary: "Get a notification target" } })
    .input(idInput)
    .output(targetOutput)
    .query(async ({ ctx, input }) => toDto(ctx.services, await findTarget(ctx.db, ctx.principal.organizationId, input.id))),

  update: protectedProcedure("alerts:write")
    .meta({
      openapi: {
        method: "PATCH", path: "/notification-targets/{id}", tags: [TAG],
        summary: "Update a notification target", description: "The type cannot change. A new url is checked like at creation; a new secret replaces the old one.",
      },
      audit: false,
    })
    .input(updateTargetInput)
    .output(targetOutput)
    .mutation(async ({ ctx, input }) => {
      if (input.url) await checkTargetUrl(ctx.services, input.url); // before the transaction: it may wait for DNS
      return auditedWithMaskedUrl(ctx, "notificationTargets.update", input, async (db) => {
        // A managed target keeps its fields; its URL and secret (never in a document) stay settable.
        await assertNotManaged(db, "NotificationTarget", ctx.principal.organizationId, input.id, { input, secretFields: ["url", "secret"] });
        return updateTarget(db, ctx.services, ctx.principal.organizationId, input);
      });
    }),

  deliveries: protectedProcedure("alerts:read")
    .meta({
      openapi: {
        method: "GET", path: "/notification-targets/{id}/deliveries", tags: [TAG],
        summary: "The target's notification deliveries (alerts and tests), newest first, with every attempt",
        description: "Each delivery lists its attempts (status code, duration, error). status filters pending, delivering, delivered or failed.",
      },
    })
    .input(listDeliveriesInput)
    .output(deliveryPageOutput)
    .query(({ ctx, input }) => listTargetDeliveries(ctx.db, ctx.principal.organizationId, input)),

  test: protectedProcedure("alerts:write")
    .meta({
      openapi: {
        method: "POST", path: "/notification-targets/{id}/test", tags: [TAG],
        summary: "Send a test notification to this target",
        description: "Queues one delivery (event alert.test, rule.id null) (202); follow it in the target's delivery history. 409 when the target is disabled.",
      },
      successStatus: 202,
      audit,
    })
    .input(idInput)
    .output(z.object({ id: z.string(), targetId: z.string(), targetName: z.string(), targetType: z.string(), status: z.string() }))
    .mutation(({ ctx, input }) => testTarget(ctx.db, ctx.services.config, ctx.principal.organizationId, input.id)),

  delete: protectedProcedure("alerts:write")
    .meta({
      openapi: {
        method: "DELETE", path: "/notification-targets/{id}", tags: [TAG],
        summary: "Delete a notification target", description: "Rules stop notifying it; past deliveries keep its name in their history.",
      },
      audit,
    })
    .input(idInput)
    .output(z.object({ id: z.string(), deleted: z.literal(true) }))
    .mutation(async ({ ctx, input }) => {
      await assertNotManaged(ctx.db, "NotificationTarget", ctx.principal.organizationId, input.id);
      return deleteTarget(ctx.db, ctx.principal.organizationId, input.id);
    }),
});
