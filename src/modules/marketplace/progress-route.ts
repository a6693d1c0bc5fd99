// GET /api/v1/marketplace-store/sync/progress: the live progress of the store's sync. A plain
// express route behind the procedures' gate (guardedJsonRoute), because with
// `Accept: text/event-stream` it answers Server-Sent Events: the snapshot at once, then every
// step the run publishes on the event bus (from any process on PostgreSQL), until the client
// goes away. Otherwise it answers the snapshot as JSON.
import express, { type Request, type Response, type Router } from "express";
import { z } from "zod";
import { eventBusOf } from "../../lib/events.js";
import type { Services } from "../../services.js";
import { errorResponse, type ExtraPaths } from "../../http/docs.js";
import { guardedJsonRoute } from "../../http/guarded-route.js";
import { PROGRESS_EVENT, progressOf } from "./progress.js";
import { progressOutput, type Progress } from "./schemas.js";
import { findStore } from "./service.js";
import { perService } from "../../lib/per-service.js";

export const PROGRESS_PATH = "/marketplace-store/sync/progress";
const KEEPALIVE_MS = 15_000;

const openStreamsOf = perService((_services: Services) => new Set<Response>());

/** Ends the open progress streams of a service (at shutdown: a stream never ends by itself). */
export function closeProgressStreams(services: Services): void {
  for (const res of openStreamsOf.peek(services) ?? []) res.end();
}

const wantsEventStream = (req: Request) => /\btext\/event-stream\b/i.test(req.headers.accept ?? "");

export function marketplaceProgressRoutes(services: Services): Router {
  const r = express.Router();
  const streams = openStreamsOf(services);

  r.get(
    PROGRESS_PATH,
    guardedJsonRoute(services, { label: "marketplaceStore.syncProgress", access: { permission: "registries:read" }, body: z.object({}) }, async ({ principal, req, res }) => {
      const { organizationId } = principal;
      const snapshot = async () => progressOf(await findStore(services.prisma, organizationId));
      const first = await snapshot();
      res.setHeader("Cache-Control", "no-cache, no-store");
      if (!wantsEventStream(req)) {
        res.status(200).json(progressOutput.parse(first));
        return;
      }

      res.status(200);
      res.setHeader("Content-Type", "text/event-stream; charset=utf-8");
      res.setHeader("Cache-Control", "no-cache, no-transform");
      res.setHeader("Connection", "keep-alive");
      res.setHeader("X-Accel-Buffering", "no");
      res.flushHeaders();
      let last = "";
      const send = (progress: Progress) => {
        const data = JSON.stringify(progressOutput.parse(progress));
        if (res.writableEnded || data === last) return;
        last = data;
        res.write(`event: progress\ndata: ${data}\n\n`);
      };
      res.write(`retry: 3000\n\n`);
      send(first);
      const unsubscribe = eventBusOf(services).subscribe(PROGRESS_EVENT, ({ organizationId: org, ...progress }) => {
        if (org === organizationId && progress.storeId === first.storeId) send(progress);
      });
      // Keep-alive comments keep proxies from closing an idle stream; each tick also reads the
      // snapshot, which bounds the delay if an event was ever lost.
      const keepalive = setInterval(() => {
        if (res.writableEnded) return;
        res.write(`: keep-alive\n\n`);
        snapshot().then(send, () => res.end());
      }, KEEPALIVE_MS);
      streams.add(res);
      const end = () => {
        clearInterval(keepalive);
        unsubscribe();
        streams.delete(res);
      };
      req.on("close", end);
      res.on("close", end);
    }),
  );
  return r;
}

const { $schema: _, ...progressSchema } = z.toJSONSchema(progressOutput) as Record<string, unknown>;

export const marketplaceProgressOpenApiPaths: ExtraPaths = {
  [PROGRESS_PATH]: {
    get: {
      operationId: "marketplaceStore-syncProgress",
      tags: ["Marketplace store"],
      summary: "The live progress of the marketplace store's sync (JSON snapshot or Server-Sent Events)",
      description:
        "Requires registries:read. Without `Accept: text/event-stream`: the snapshot as JSON (state idle, queued, running, succeeded or failed; the " +
        "registry and repository being read; the counts so far; the run's sync record once written). With it: Server-Sent Events, `event: progress` " +
        "with the snapshot at once and at every step of a run, a comment every 15 seconds, until the client disconnects. Works across server " +
        "processes on PostgreSQL. 404 when the organization has no marketplace store.",
      security: [{ ApiKey: [] }, { Bearer: [] }],
      responses: {
        200: {
          description: "The progress snapshot, or the event stream",
          content: {
            "application/json": { schema: progressSchema },
            "text/event-stream": {
              schema: { type: "string" },
              example: 'event: progress\ndata: {"storeId":"...","state":"running","currentRepository":"edge/vision","tagsRead":3,...}\n\n',
            },
          },
        },
        401: errorResponse("Authentication missing or invalid"),
        403: errorResponse("Missing permission registries:read"),
        404: errorResponse("The organization has no marketplace store"),
      },
    },
  },
};
