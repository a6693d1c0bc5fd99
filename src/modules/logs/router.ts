// Device logs: the agent's ingest (POST /agent/logs, device token), the list and the sources.
// The follow mode (Server-Sent Events) is a plain express route: src/modules/logs/stream-route.ts.
import { z } from "zod";
import { protectedProcedure, router } from "../../trpc/procedures.js";
import { deviceProcedure } from "../../trpc/device-auth.js";
import { BUSY_ANSWER, MAX_BATCH_ITEMS, ingestOutput } from "../telemetry/schemas.js";
import { announceLogs } from "./follow.js";
import { listLogsInput, logBatchInput, logPageOutput, logSourcesOutput } from "./schemas.js";
import { listLogs, listLogSources, logWriterOf } from "./service.js";

const TAG = "Device logs";

export const logsIngestRouter = router({
  ingest: deviceProcedure
    .meta({
      openapi: {
        method: "POST", path: "/agent/logs", tags: ["Device agent"],
        summary: "Send a batch of log lines (device token)",
        description:
          `Up to ${MAX_BATCH_ITEMS} entries { timestamp, level?, source?, message } per call, stored in one statement. One bad entry ` +
          "refuses the batch with a 400 naming its index (entries.<index>.<field>). level: debug, info (default), warn, error, fatal; " +
          "source defaults to \"agent\". Timestamps more than five minutes ahead of the server clock are refused. NUL characters " +
          "and unpaired surrogates in a message (a process's binary output) are stored as U+FFFD; anywhere else they refuse the batch. " +
          BUSY_ANSWER,
      },
      // A poisoned line must not make the agent resend its batch forever (docs/telemetry.md).
      lossyText: [["entries", "*", "message"]],
      ingest: true,
    })
    .input(logBatchInput)
    .output(ingestOutput)
    .mutation(async ({ ctx, input }) => {
      const device = { id: ctx.device.deviceId, organizationId: ctx.device.organizationId };
      const accepted = await logWriterOf(ctx.services).submit({ device, entries: input.entries });
      // After the commit: followers fetch what was just written. A failed announcement only
      // delays followers until their next keep-alive fetch; the lines are stored.
      await announceLogs(ctx.services, device).catch((err: Error) => ctx.services.logger.warn({ err: err.message }, "could not announce log lines"));
      return { accepted };
    }),
});

export const logsRouter = router({
  sources: protectedProcedure("telemetry:read")
    .meta({ openapi: { method: "GET", path: "/devices/{id}/logs/sources", tags: [TAG], summary: "The log sources of a device and when each last wrote" } })
    .input(z.object({ id: z.uuid() }))
    .output(logSourcesOutput)
    .query(({ ctx, input }) => listLogSources(ctx.db, ctx.principal.organizationId, input.id)),

  list: protectedProcedure("telemetry:read")
    .meta({
      openapi: {
        method: "GET", path: "/devices/{id}/logs", tags: [TAG],
        summary: "A device's log lines, newest first",
        description: "Filters: source, level (repeatable), q (case-insensitive substring of the message), from/to (ISO 8601). Paged with limit/offset.",
      },
    })
    .input(listLogsInput)
    .output(logPageOutput)
    .query(({ ctx, input }) => listLogs(ctx.db, ctx.principal.organizationId, input)),
});
