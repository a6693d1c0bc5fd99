// /api/v1/alerts: the alerts rules raised, firing now or resolved (the rules themselves are
// under /alert-rules, ./router.ts), and what a person does with one: acknowledge, resolve.
import { eventBusOf } from "../../lib/events.js";
import { protectedProcedure, router } from "../../trpc/procedures.js";
import { acknowledgeAlert, alertKeyInput, alertOutput, alertPageOutput, listAlerts, listAlertsInput, resolveAlert } from "./active.js";

const TAG = "Alerts";
const audit = { entity: "alert" };

export const alertsRouter = router({
  list: protectedProcedure("alerts:read")
    .meta({
      openapi: {
        method: "GET", path: "/alerts", tags: [TAG],
        summary: "Alerts: one rule firing for one subject (a device or a config source)",
        description: "state=firing (default) lists what fires now, newest first; state=resolved what has resolved, most recent first. " +
          "subjectType says what an alert is about: device (deviceId, deviceName) or config_source (a config_source_failing rule; subjectId, subjectName; deviceId null). " +
          "Filters: severity, deviceId, subjectType, subjectId, ruleId.",
      },
    })
    .input(listAlertsInput)
    .output(alertPageOutput)
    .query(({ ctx, input }) => listAlerts(ctx.db, ctx.principal.organizationId, input)),

  acknowledge: protectedProcedure("alerts:write")
    .meta({
      openapi: {
        method: "POST", path: "/alerts/acknowledge", tags: [TAG],
        summary: "Acknowledge a firing alert (one rule for one subject)",
        description: "The alert: ruleId and subjectId (or deviceId for a device's alert). Records who took it on and when (acknowledgedAt, acknowledgedBy); it keeps firing until its condition ends. 409 when it is not firing. Firing anew clears it.",
      },
      audit,
    })
    .input(alertKeyInput)
    .output(alertOutput)
    .mutation(({ ctx, input }) => acknowledgeAlert(ctx.db, ctx.principal.organizationId, ctx.principal.userId, input)),

  resolve: protectedProcedure("alerts:write")
    .meta({
      openapi: {
        method: "POST", path: "/alerts/resolve", tags: [TAG],
        summary: "Resolve a firing alert by hand",
        description: "The alert: ruleId and subjectId (or deviceId for a device's alert). The alert moves to resolved (resolvedBy names who); no notification is sent. If the condition still holds at the next evaluation, the rule fires again. 409 when it is not firing.",
      },
      audit,
    })
    .input(alertKeyInput)
    .output(alertOutput)
    .mutation(async ({ ctx, input }) => {
      const { alert, event } = await resolveAlert(ctx.db, ctx.principal.organizationId, ctx.principal.userId, input);
      ctx.afterCommit(() => eventBusOf(ctx.services).publish("alert.resolved", event));
      return alert;
    }),
});
