// /api/v1/alert-rules: rules, their delivery history and a test notification.
import { z } from "zod";
import { protectedProcedure, router } from "../../trpc/procedures.js";
import {
  createRuleInput, deliveryPageOutput, listDeliveriesInput, listRulesInput, ruleOutput, rulePageOutput, testOutput, updateRuleInput,
} from "./schemas.js";
import { createRule, deleteRule, getRule, listDeliveries, listRules, testRule, updateRule } from "./service.js";
import { assertNotManaged } from "../config/guard.js";

const TAG = "Alert rules";
const audit = { entity: "alert_rule" };
const idInput = z.object({ id: z.uuid() });

export const alertRulesRouter = router({
  list: protectedProcedure("alerts:read")
    .meta({ openapi: { method: "GET", path: "/alert-rules", tags: [TAG], summary: "List alert rules, newest first" } })
    .input(listRulesInput)
    .output(rulePageOutput)
    .query(({ ctx, input }) => listRules(ctx.db, ctx.principal.organizationId, input)),

  create: protectedProcedure("alerts:write")
    .meta({
      openapi: {
        method: "POST", path: "/alert-rules", tags: [TAG],
        summary: "Create an alert rule",
        description:
          "condition is one of: { type: metric_threshold, metric, operator (>, >=, <, <=, ==, !=), threshold, durationSeconds } " +
          "(every snapshot of the last durationSeconds meets it, e.g. cpuUsagePercent > 90 for 300 s; 0 = the latest snapshot); " +
          "{ type: device_offline, durationSeconds }; { type: deployment_failed }; { type: certificate_expiring, withinDays }; " +
          "{ type: config_source_failing, consecutiveFailures, sourceNames } (config sources whose syncs are refused or fail; sourceNames [] = every source; no labelSelector). " +
          "An unknown metric, operator or type, or an unknown source name, is a 400. labelSelector scopes the devices; severity info, warning or critical; " +
          "cooldownSeconds between two firing notifications per subject (device or config source); targetIds the notification targets.",
      },
      successStatus: 201,
      audit,
    })
    .input(createRuleInput)
    .output(ruleOutput)
    .mutation(({ ctx, input }) => createRule(ctx.db, ctx.principal.organizationId, input)),

  deliveries: protectedProcedure("alerts:read")
    .meta({
      openapi: {
        method: "GET", path: "/alert-rules/{id}/deliveries", tags: [TAG],
        summary: "The rule's notification deliveries, newest first, with every attempt",
        description: "Each delivery lists its attempts (status code, duration, error). status filters pending, delivering, delivered or failed.",
      },
    })
    .input(listDeliveriesInput)
    .output(deliveryPageOutput)
    .query(({ ctx, input }) => listDeliveries(ctx.db, ctx.principal.organizationId, input)),

  test: protectedProcedure("alerts:write")
    .meta({
      openapi: {
        method: "POST", path: "/alert-rules/{id}/test", tags: [TAG],
        summary: "Send a test notification to the rule's targets",
        description: "Queues one delivery per enabled target (202); follow them in the delivery history. 409 when the rule has no enabled target.",
      },
      successStatus: 202,
      audit,
    })
    .input(idInput)
    .output(testOutput)
    .mutation(({ ctx, input }) => testRule(ctx.db, ctx.services.config, ctx.principal.organizationId, input.id)),

  get: protectedProcedure("alerts:read")
    .meta({ openapi: { method: "GET", path: "/alert-rules/{id}", tags: [TAG], summary: "Get an alert rule" } })
    .input(idInput)
    .output(ruleOutput)
    .query(({ ctx, input }) => getRule(ctx.db, ctx.principal.organizationId, input.id)),

  update: protectedProcedure("alerts:write")
    .meta({
      openapi: {
        method: "PATCH", path: "/alert-rules/{id}", tags: [TAG],
        summary: "Update an alert rule", description: "Fields left out stay; targetIds replaces the rule's targets.",
      },
      audit,
    })
    .input(updateRuleInput)
    .output(ruleOutput)
    .mutation(async ({ ctx, input }) => {
      await assertNotManaged(ctx.db, "AlertRule", ctx.principal.organizationId, input.id);
      return updateRule(ctx.db, ctx.principal.organizationId, input);
    }),

  delete: protectedProcedure("alerts:write")
    .meta({ openapi: { method: "DELETE", path: "/alert-rules/{id}", tags: [TAG], summary: "Delete an alert rule (its states and delivery history go with it)" }, audit })
    .input(idInput)
    .output(z.object({ id: z.string(), deleted: z.literal(true) }))
    .mutation(async ({ ctx, input }) => {
      await assertNotManaged(ctx.db, "AlertRule", ctx.principal.organizationId, input.id);
      return deleteRule(ctx.db, ctx.principal.organizationId, input.id);
    }),
});
