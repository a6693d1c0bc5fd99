// Everything the realtime capability needs from the HTTP server, attached in one call from
// src/server.ts and the test harness: the WebSocket upgrade of GET /api/v1/realtime?ticket=...,
// the cross-process pub/sub (LISTEN/NOTIFY on PostgreSQL) behind the event bus and the log
// streams, and their shutdown.
import crypto from "node:crypto";
import type { IncomingMessage, Server } from "node:http";
import type { Duplex } from "node:stream";
import { WebSocketServer } from "ws";
import type { Services } from "../../services.js";
import { eventBusOf } from "../../lib/events.js";
import { closeLogStreams } from "../logs/stream-route.js";
import { closeProgressStreams } from "../marketplace/progress-route.js";
import { pubSubOf } from "./pubsub.js";
import { RealtimeHub } from "./hub.js";
import { consumeTicket } from "./tickets.js";
import { refusalError, requestTargetRefusal } from "../../http/storable-input.js";
import { restErrorAnswer } from "../../http/error-response.js";
import { claimUpgradePaths, isClaimedUpgradePath } from "../../http/upgrade-paths.js";

export const REALTIME_PATH = "/api/v1/realtime";

function refuse(socket: Duplex, status: number, reason: string, message: string) {
  writeAnswer(socket, status, reason, { code: status === 401 ? "UNAUTHORIZED" : status === 404 ? "NOT_FOUND" : "BAD_REQUEST", message });
}

function writeAnswer(socket: Duplex, status: number, reason: string, answer: object) {
  const body = JSON.stringify(answer);
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}

export interface UpgradeHandlers {
  hub: RealtimeHub;
  close(): Promise<void>;
}

export function attachUpgradeHandlers(server: Server, services: Services): UpgradeHandlers {
  const wss = new WebSocketServer({ noServer: true, maxPayload: 16 * 1024 });
  const hub = new RealtimeHub(services);
  const pubsub = pubSubOf(services);
  if (services.database.opened.raw.kind === "postgres") {
    // Events published in other processes reach this process's subscribers (and vice versa).
    eventBusOf(services)
      .attachTransport(pubsub.eventTransport())
      .catch((err: Error) => services.logger.warn({ err: err.message }, "could not attach the event transport"));
  }

  const onUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const url = new URL(req.url ?? "/", "http://localhost");
    if (url.pathname !== REALTIME_PATH) {
      // Someone else's upgrade path (src/http/upgrade-paths.ts); refuse only when nobody handles it.
      if (!isClaimedUpgradePath(server, url.pathname)) refuse(socket, 404, "Not Found", "Not found");
      return;
    }
    socket.on("error", () => socket.destroy());
    // The request boundary of express (src/http/storable-input.ts) never sees an upgrade.
    const refusal = requestTargetRefusal(req.url ?? "/", "rest");
    if (refusal) {
      const request = { requestId: crypto.randomUUID(), sourceIp: req.socket.remoteAddress ?? null, userAgent: null };
      const { status, body } = restErrorAnswer(services, request, refusalError(refusal));
      return writeAnswer(socket, status, status === 400 ? "Bad Request" : "Not Found", body);
    }
    const ticket = url.searchParams.get("ticket") ?? "";
    consumeTicket(services.prisma, ticket).then(
      (holder) => {
        if (!holder) return refuse(socket, 401, "Unauthorized", "Invalid, used or expired ticket: ask POST /api/v1/realtime/ticket for a new one");
        wss.handleUpgrade(req, socket, head, (ws) => {
          services.logger.info({ organizationId: holder.organizationId, userId: holder.userId, channels: holder.channels }, "realtime connected");
          hub.add(ws, holder);
        });
      },
      (err: Error) => {
        services.logger.error({ err: err.message }, "realtime ticket check failed");
        refuse(socket, 503, "Service Unavailable", "The database is unavailable; try again shortly");
      },
    );
  };
  server.on("upgrade", onUpgrade);
  const unclaim = claimUpgradePaths(server, (pathname) => pathname === REALTIME_PATH);

  return {
    hub,
    close: async () => {
      server.off("upgrade", onUpgrade);
      unclaim();
      closeLogStreams(services);
      closeProgressStreams(services);
      hub.close();
      wss.close();
      await pubsub.stop();
    },
  };
}
