// POST /api/v1/realtime/ticket: the short-lived, single-use ticket that opens the realtime
// WebSocket (GET /api/v1/realtime?ticket=..., src/modules/realtime/upgrade.ts).
import { z } from "zod";
import { protectedProcedure, router } from "../../trpc/procedures.js";
import { issueTicket, REALTIME_CHANNELS, TICKET_TTL_SECONDS } from "./tickets.js";

const channel = z.enum(Object.keys(REALTIME_CHANNELS) as [keyof typeof REALTIME_CHANNELS]);

export const realtimeRouter = router({
  ticket: protectedProcedure("telemetry:read")
    .meta({
      openapi: {
        method: "POST", path: "/realtime/ticket", tags: ["Realtime"],
        summary: "A single-use ticket for the realtime WebSocket",
        description:
          `The ticket is valid for ${TICKET_TTL_SECONDS} seconds and opens one connection: GET /api/v1/realtime?ticket=<ticket> with a ` +
          "WebSocket upgrade. The connection carries the events of the caller's organization on the channels its permissions allow: " +
          "devices (devices:read: device.status_changed), deployments (deployments:read) and alerts (alerts:read: alert.firing, alert.resolved). " +
          "Each message is JSON { type, channel, data, at }; the first is { type: \"ready\", channels }.",
      },
      successStatus: 201,
      // Not audited: every page load of the console asks for one, and a ticket changes nothing a
      // person did (docs/audit.md, "What is not audited"); the single-row insert needs no transaction.
      audit: false,
    })
    .input(z.object({}).optional())
    .output(z.object({ id: z.string(), ticket: z.string(), expiresAt: z.string(), channels: z.array(channel), url: z.string() }))
    .mutation(({ ctx }) => issueTicket(ctx.db, ctx.principal)),
});
