// GET /api/v1/devices/{id}/logs/stream: a device's log lines as Server-Sent Events. A plain
// express route (procedures only answer JSON) with the same authentication, permission check
// and tenant scoping as the procedures (authorizeRequest, src/http/guarded-route.ts): API keys,
// bearer sessions, and the console's session cookie (a same-origin EventSource sends it). It
// replays the last `tail` lines (or, with Last-Event-ID or `after`, every line after that
// id), then pushes new lines as the device sends them, until the client goes away.
import express, { type NextFunction, type Request, type Response, type Router } from "express";
import { TRPCError } from "@trpc/server";
import { z } from "zod";
import type { Services } from "../../services.js";
import { requestInfoOf } from "../../trpc/context.js";
import { requireDevice } from "../telemetry/device.js";
import { followLogs } from "./follow.js";
import { LOG_LEVELS, logFilterInput, type LogLineDto } from "./schemas.js";
import { logsAfter, newestLogId, tailLogs } from "./service.js";
import { authorizeRequest } from "../../http/guarded-route.js";
import { sendRestError } from "../../http/error-response.js";
import { errorResponse, type ExtraPaths } from "../../http/docs.js";
import { perService } from "../../lib/per-service.js";

const KEEPALIVE_MS = 15_000;
const MAX_TAIL = 1000;

const LINE_ID = /^\d{1,19}$/;

const streamQuery = z.object({
  ...logFilterInput,
  tail: z.coerce.number().int().min(0).max(MAX_TAIL).default(100),
  // EventSource sends Last-Event-ID only on its own reconnects; a client that reconnects by
  // itself (with back-off) opens a new EventSource, which cannot set headers.
  after: z.string().regex(LINE_ID, "after must be a log line id").optional(),
});

function parseQuery(req: Request) {
  const level = req.query.level;
  const parsed = streamQuery.safeParse({
    id: req.params.id,
    source: req.query.source,
    q: req.query.q,
    tail: req.query.tail,
    after: req.query.after,
    level: level === undefined ? undefined : Array.isArray(level) ? level : [level],
  });
  // 400 naming each field, as every operation's (the error formatter, src/trpc/init.ts)
  if (!parsed.success) throw new TRPCError({ code: "BAD_REQUEST", message: "Invalid input", cause: parsed.error });
  return parsed.data;
}

/** Where to resume: the Last-Event-ID header (EventSource's own reconnect, the newest) or `after`. */
function resumePointOf(req: Request, after: string | undefined): bigint | null {
  const header = req.headers["last-event-id"];
  if (typeof header === "string" && LINE_ID.test(header)) return BigInt(header);
  return after === undefined ? null : BigInt(after);
}

// Open streams of each running service, so that shutdown can end them (a stream never ends by itself).
const openStreamsOf = perService((_services: Services) => new Set<Response>());

/** Log streams open in this process (the service's metrics). */
export function openLogStreamCount(services: Services): number {
  return openStreamsOf.peek(services)?.size ?? 0;
}

export function closeLogStreams(services: Services) {
  for (const res of openStreamsOf.peek(services) ?? []) res.end();
}

export function logStreamRoutes(services: Services): Router {
  const r = express.Router();
  const streams = openStreamsOf(services);

  r.get("/devices/:id/logs/stream", async (req: Request, res: Response, next: NextFunction) => {
    let follower: ReturnType<typeof followLogs> | null = null;
    try {
      const principal = await authorizeRequest(services, req, { permission: "telemetry:read" }, "logs.stream");
      const { id, tail, after, ...filter } = parseQuery(req);
      await requireDevice(services.prisma, principal.organizationId, id);

      const resumeAfter = resumePointOf(req, after);
      const replay = resumeAfter !== null
        ? await logsAfter(services.prisma, id, filter, resumeAfter, MAX_TAIL)
        : await tailLogs(services.prisma, id, filter, tail);
      const cursor = replay.length > 0 ? BigInt(replay[replay.length - 1].id) : resumeAfter ?? (await newestLogId(services.prisma, id));

      res.status(200);
      res.setHeader("Content-Type", "text/event-stream; charset=utf-8");
      res.setHeader("Cache-Control", "no-cache, no-transform");
      res.setHeader("Connection", "keep-alive");
      res.setHeader("X-Accel-Buffering", "no"); // nginx: do not buffer the stream
      res.flushHeaders();
      const send = (lines: LogLineDto[]) => {
        if (res.writableEnded) return;
        res.write(lines.map((l) => `id: ${l.id}\nevent: log\ndata: ${JSON.stringify(l)}\n\n`).join(""));
      };
      res.write(`retry: 3000\n\n`);
      send(replay);
      res.write(`event: ready\ndata: ${JSON.stringify({ replayed: replay.length })}\n\n`);

      follower = followLogs(services, id, filter, cursor, send);
      // Lines written between the replay and the subscription: fetch once now.
      follower.poke();
      // Keep-alive comments keep proxies from closing an idle stream; each tick also fetches,
      // which bounds the delay if an announcement was ever lost.
      const keepalive = setInterval(() => {
        if (!res.writableEnded) res.write(`: keep-alive\n\n`);
        follower?.poke();
      }, KEEPALIVE_MS);
      streams.add(res);
      const end = () => {
        clearInterval(keepalive);
        follower?.stop();
        streams.delete(res);
      };
      req.on("close", end);
      res.on("close", end);
    } catch (err) {
      follower?.stop();
      if (res.headersSent) return void res.end();
      if (err instanceof TRPCError && err.code !== "INTERNAL_SERVER_ERROR") return sendRestError(services, res, requestInfoOf(req), err);
      next(err);
    }
  });
  return r;
}

const security = [{ ApiKey: [] }, { Bearer: [] }];

export const logStreamOpenApiPaths: ExtraPaths = {
  "/devices/{id}/logs/stream": {
    get: {
      operationId: "logs-stream",
      tags: ["Device logs"],
      summary: "Follow a device's log lines (Server-Sent Events)",
      description:
        "Requires telemetry:read. Answers `text/event-stream`: first the last `tail` lines (default 100, at most 1000) that match the " +
        "filters, oldest first, then an `event: ready`, then each new line as the device sends it (`event: log`, `id` = line id, " +
        "`data` = the log line as JSON). With a `Last-Event-ID` header (or `after`, for a client that reconnects with a new " +
        "EventSource) it resumes after that line instead of replaying the tail. The console's session cookie authenticates it too, " +
        "so a same-origin EventSource works. " +
        "A comment is sent every 15 seconds to keep proxies from closing the connection. Works across server processes on PostgreSQL.",
      security,
      parameters: [
        { name: "id", in: "path", required: true, schema: { type: "string", format: "uuid" } },
        { name: "tail", in: "query", required: false, schema: { type: "integer", minimum: 0, maximum: MAX_TAIL, default: 100 } },
        { name: "source", in: "query", required: false, schema: { type: "string" } },
        { name: "level", in: "query", required: false, schema: { type: "array", items: { type: "string", enum: LOG_LEVELS } }, style: "form", explode: true },
        { name: "q", in: "query", required: false, schema: { type: "string" }, description: "case-insensitive text search" },
        { name: "after", in: "query", required: false, schema: { type: "string", pattern: "^[0-9]{1,19}$" }, description: "resume after this line id (Last-Event-ID wins when both are sent)" },
        { name: "Last-Event-ID", in: "header", required: false, schema: { type: "string" } },
      ],
      responses: {
        200: {
          description: "The event stream",
          content: {
            "text/event-stream": {
              schema: { type: "string" },
              example: 'id: 42\nevent: log\ndata: {"id":"42","deviceId":"...","timestamp":"2026-01-01T00:00:00.000Z","level":"info","source":"agent","message":"started"}\n\n',
            },
          },
        },
        400: errorResponse("Invalid input"),
        401: errorResponse("Authentication missing or invalid"),
        403: errorResponse("Missing permission telemetry:read"),
        404: errorResponse("Device not found (or of another organization)"),
      },
    },
  },
};
