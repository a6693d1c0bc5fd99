// GET /api/v1/fleet/health: the organization's fleet at a glance.
import { protectedProcedure, router } from "../../trpc/procedures.js";
import { fleetHealthInput, fleetHealthOutput } from "./schemas.js";
import { fleetHealth } from "./service.js";

export const fleetRouter = router({
  health: protectedProcedure("telemetry:read")
    .meta({
      openapi: {
        method: "GET", path: "/fleet/health", tags: ["Fleet"],
        summary: "Fleet health summary",
        description:
          "Devices by status; devices under resource pressure (CPU, memory or disk percent of their latest snapshot above the " +
          "thresholds, default 90); devices with failed containers; devices whose certificate expires soon (default within 30 days) " +
          "or has expired; firing alerts by severity.",
      },
    })
    .input(fleetHealthInput)
    .output(fleetHealthOutput)
    .query(({ ctx, input }) => fleetHealth(ctx.db, ctx.principal.organizationId, input)),
});
