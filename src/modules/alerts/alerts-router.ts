// /api/v1/alerts: the alerts rules raised, firing now or resolved (the rules themselves are
// under /alert-rules, ./router.ts).
import { protectedProcedure, router } from "../../trpc/procedures.js";
import { alertPageOutput, listAlerts, listAlertsInput } from "./active.js";

export const alertsRouter = router({
  list: protectedProcedure("alerts:read")
    .meta({
      openapi: {
        method: "GET", path: "/alerts", tags: ["Alerts"],
        summary: "Alerts: one rule firing for one device",
        description: "state=firing (default) lists what fires now, newest first; state=resolved what has resolved, most recent first. Filters: severity, deviceId, ruleId.",
      },
    })
    .input(listAlertsInput)
    .output(alertPageOutput)
    .query(({ ctx, input }) => listAlerts(ctx.db, ctx.principal.organizationId, input)),
});
