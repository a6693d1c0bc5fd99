// The two legs of a stream, as WebSocket upgrades on the service's HTTP server, and the
// internal relay port of this process (docs/remote-access.md):
//   user leg    GET /api/v1/remote-sessions/{id}/stream?ticket=<one-use ticket>
//               (a browser Origin other than the service's own is refused 403)
//   device leg  GET /api/v1/agent/remote-sessions/{id}/stream?token=<offer token>
//               with Authorization: Bearer <device token>; the stream must be this device's
//   internal    GET /internal/remote/{connectionId} on REMOTE_RELAY_HOST:REMOTE_RELAY_PORT,
//               a leg that reached another process, piped here (HMAC of the installation's
//               key; marked by a hop header, never forwarded again)
// The first leg of a stream makes its process the relay (RemoteConnection.relayNode).
// Attached in one call from src/server.ts and the test harness, like the realtime upgrade.
import crypto from "node:crypto";
import http, { type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Duplex } from "node:stream";
import WebSocket, { WebSocketServer } from "ws";
import type { Services } from "../../services.js";
import { claimUpgradePaths } from "../../http/upgrade-paths.js";
import { auditDeviceRefusal, authenticateDevice, DeviceAuthFailure } from "../../trpc/device-auth.js";
import { errorBody } from "../../trpc/errors.js";
import { MAX_MESSAGE_BYTES, pipeBothWays, closeLeg, remoteRelayOf, type Side } from "./relay.js";
import { hopSignature, isHopSignature, parseDeviceLegToken, ticketHashOf } from "./tokens.js";
import { remoteWaitsOf } from "../agent/remote-wait.js";
import { joinTimers } from "./timers.js";
import { remoteSignalsOf } from "./signals.js";
import { subscribeToEndings } from "./endings.js";
import { rememberPublicServer } from "./run.js";

const USER_PATH = /^\/api\/v1\/remote-sessions\/([0-9a-f-]{36})\/stream$/;
const DEVICE_PATH = /^\/api\/v1\/agent\/remote-sessions\/([0-9a-f-]{36})\/stream$/;
const INTERNAL_PATH = /^\/internal\/remote\/([0-9a-f-]{36})$/;
export const HOP_HEADER = "x-fleet-relay-hop";
const SIDE_HEADER = "x-fleet-relay-side";
const AT_HEADER = "x-fleet-relay-at";
const SIGNATURE_HEADER = "x-fleet-relay-signature";
const SESSION_HEADER = "x-fleet-relay-session";

const REASONS: Record<number, string> = { 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found", 409: "Conflict", 503: "Service Unavailable", 508: "Loop Detected" };
const CODES: Record<number, string> = { 400: "BAD_REQUEST", 401: "UNAUTHORIZED", 403: "FORBIDDEN", 404: "NOT_FOUND", 409: "CONFLICT", 503: "SERVICE_UNAVAILABLE", 508: "LOOP_DETECTED" };

function refuse(socket: Duplex, status: number, message: string) {
  const body = JSON.stringify(errorBody(crypto.randomUUID(), status, CODES[status] ?? "BAD_REQUEST", message));
  socket.end(`HTTP/1.1 ${status} ${REASONS[status] ?? "Error"}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
}

/**
 * A browser's Origin that is not the service's own (cross-site WebSocket hijacking): the Host
 * it was reached at, the host a trusted proxy forwarded, or PUBLIC_URL's. Clients that are not
 * browsers send no Origin.
 */
export function isForeignOrigin(req: IncomingMessage, services: Services): boolean {
  const origin = req.headers.origin;
  if (origin === undefined) return false;
  let host: string;
  try {
    host = new URL(origin).host;
  } catch {
    return true;
  }
  const own = new Set<string>();
  if (req.headers.host) own.add(req.headers.host);
  const forwarded = req.headers["x-forwarded-host"];
  if (services.config.TRUST_PROXY_HOPS > 0 && typeof forwarded === "string") own.add(forwarded.split(",")[0].trim());
  if (services.config.PUBLIC_URL) own.add(new URL(services.config.PUBLIC_URL).host);
  return !own.has(host);
}

interface Claimed {
  connectionId: string;
  sessionId: string;
  relayNode: string;
}

export interface RemoteSessionsAttachment {
  /** host:port of this process's internal relay port */
  relayNode: string;
  close(): Promise<void>;
}

export async function attachRemoteSessions(server: Server, services: Services): Promise<RemoteSessionsAttachment> {
  const wss = new WebSocketServer({ noServer: true, maxPayload: MAX_MESSAGE_BYTES });
  const relay = remoteRelayOf(services);
  rememberPublicServer(services, server); // POST /remote-sessions/run joins its sessions here
  const { config, logger } = services;
  remoteSignalsOf(services); // listening for offers and ends from the other processes

  // The internal port: only hops from the other processes of this installation.
  const internal = http.createServer((_req, res) => void res.writeHead(404).end());
  await new Promise<void>((resolve, reject) => {
    internal.once("error", reject);
    // exclusive: in a node:cluster worker, a port of its own (not one shared through the primary)
    internal.listen({ host: config.REMOTE_RELAY_HOST, port: config.REMOTE_RELAY_PORT, exclusive: true }, () => resolve());
  });
  const port = (internal.address() as AddressInfo).port;
  const relayNode = config.REMOTE_RELAY_ADVERTISE ?? `${config.REMOTE_RELAY_HOST.includes(":") ? `[${config.REMOTE_RELAY_HOST}]` : config.REMOTE_RELAY_HOST}:${port}`;

  /** The relay of the connection: this process unless another leg got there first. */
  async function claimRelay(connectionId: string): Promise<string> {
    const rows = await services.prisma.$queryRaw<{ relayNode: string }[]>`
      UPDATE "RemoteConnection" SET "relayNode" = COALESCE("relayNode", ${relayNode}) WHERE "id" = ${connectionId}::uuid RETURNING "relayNode"`;
    return rows[0]?.relayNode ?? relayNode;
  }

  function join(req: IncomingMessage, socket: Duplex, head: Buffer, side: Side, claimed: Claimed) {
    wss.handleUpgrade(req, socket, head, (ws) => {
      ws.on("error", () => undefined);
      // Paused at once: the client may send as soon as it is open (a forwarded connection's
      // request), and a message read while streamOf awaits the database has no listener yet.
      ws.pause();
      if (claimed.relayNode === relayNode) {
        void relay.streamOf(claimed.connectionId, claimed.sessionId).then((stream) => {
          if (!stream) return closeLeg(ws, 4000, "the session has ended");
          stream.attach(side, ws);
        });
        return;
      }
      forward(ws, side, claimed);
    });
  }

  /** A leg whose stream another process relays: piped there over the internal port. */
  function forward(leg: WebSocket, side: Side, claimed: Claimed) {
    leg.pause();
    const at = Date.now();
    const hop = new WebSocket(`ws://${claimed.relayNode}/internal/remote/${claimed.connectionId}`, {
      headers: {
        [HOP_HEADER]: "1", [SIDE_HEADER]: side, [AT_HEADER]: String(at), [SESSION_HEADER]: claimed.sessionId,
        [SIGNATURE_HEADER]: hopSignature(services.jwtKey, claimed.connectionId, side, at),
      },
      maxPayload: MAX_MESSAGE_BYTES,
      perMessageDeflate: false,
    });
    hop.on("error", (err) => {
      logger.warn({ err: err.message, relayNode: claimed.relayNode }, "remote relay unreachable");
      closeLeg(leg, 1011, "the session's relay is unreachable");
    });
    hop.once("open", () => {
      relay.addForwarded({ sessionId: claimed.sessionId, leg, hop });
      pipeBothWays(leg, hop, () => undefined);
    });
    leg.once("close", () => closeLeg(hop, 1000));
  }

  const onUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const url = new URL(req.url ?? "/", "http://localhost");
    const user = USER_PATH.exec(url.pathname);
    const device = user ? null : DEVICE_PATH.exec(url.pathname);
    if (!user && !device) return; // someone else's path
    socket.on("error", () => socket.destroy());
    // A hop header on the public port is a loop (or a forgery): never forwarded again.
    if (req.headers[HOP_HEADER] !== undefined) return refuse(socket, 508, "A forwarded remote-session leg reached a public port");
    if (relay.stopping) return refuse(socket, 503, "The service is stopping");
    const work = user ? userLeg(req, user[1], url) : deviceLeg(req, device![1], url);
    work.then(
      (outcome) => ("refusal" in outcome ? refuse(socket, outcome.refusal[0], outcome.refusal[1]) : join(req, socket, head, user ? "user" : "device", outcome)),
      (err: Error) => {
        logger.error({ err: err.message }, "remote session leg check failed");
        refuse(socket, 503, "The database is unavailable; try again shortly");
      },
    );
  };

  type Outcome = Claimed | { refusal: [number, string] };

  async function userLeg(req: IncomingMessage, sessionId: string, url: URL): Promise<Outcome> {
    if (isForeignOrigin(req, services)) return { refusal: [403, "This WebSocket is accepted only from the service's own pages (Origin)"] };
    const hash = ticketHashOf(url.searchParams.get("ticket") ?? "");
    const rows = hash
      ? await services.prisma.$queryRaw<{ id: string; state: string }[]>`
          UPDATE "RemoteConnection" c SET "userJoinedAt" = now()
            FROM "RemoteSession" s
           WHERE c."ticketHash" = ${hash} AND c."sessionId" = ${sessionId}::uuid AND s."id" = c."sessionId"
             AND c."userJoinedAt" IS NULL AND c."endedAt" IS NULL AND c."ticketExpiresAt" > now() AND s."state" <> 'ended'
          RETURNING c."id", s."state"`
      : [];
    if (!rows[0]) return { refusal: [401, "Invalid, used or expired ticket, or the session has ended: ask POST /api/v1/remote-sessions/{id}/tickets for a new one"] };
    return { connectionId: rows[0].id, sessionId, relayNode: await claimRelay(rows[0].id) };
  }

  async function deviceLeg(req: IncomingMessage, sessionId: string, url: URL): Promise<Outcome> {
    const request = { requestId: crypto.randomUUID(), sourceIp: req.socket.remoteAddress ?? null, userAgent: null };
    let principal;
    try {
      principal = await authenticateDevice(services, req.headers, { recheck: true });
    } catch (err) {
      if (!(err instanceof DeviceAuthFailure)) throw err;
      await auditDeviceRefusal(services, request, "agent.remoteStream", err).catch(() => undefined);
      return { refusal: [err.code === "FORBIDDEN" ? 403 : 401, err.message] };
    }
    const connectionId = parseDeviceLegToken(services.jwtKey, url.searchParams.get("token") ?? "");
    if (!connectionId) return { refusal: [401, "Invalid token for the device's leg: use the token of the offer"] };
    const rows = await services.prisma.$queryRaw<{ id: string }[]>`
      UPDATE "RemoteConnection" c SET "deviceJoinedAt" = now(), "deviceCertificateId" = ${principal.certificateId}::uuid
        FROM "RemoteSession" s
       WHERE c."id" = ${connectionId}::uuid AND c."sessionId" = ${sessionId}::uuid AND s."id" = c."sessionId"
         AND c."deviceId" = ${principal.deviceId}::uuid AND s."deviceId" = ${principal.deviceId}::uuid
         AND c."deviceJoinedAt" IS NULL AND c."endedAt" IS NULL AND s."state" <> 'ended'
         AND c."createdAt" + (s."joinDeadline" - s."createdAt") > now()
      RETURNING c."id"`;
    if (!rows[0]) return { refusal: [404, "No stream of this device waits under this session and token (used, expired or ended)"] };
    return { connectionId, sessionId, relayNode: await claimRelay(connectionId) };
  }

  // Internal hops: the other processes' legs of streams relayed here.
  internal.on("upgrade", (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on("error", () => socket.destroy());
    const url = new URL(req.url ?? "/", "http://localhost");
    const match = INTERNAL_PATH.exec(url.pathname);
    const side = req.headers[SIDE_HEADER];
    const sessionId = String(req.headers[SESSION_HEADER] ?? "");
    const at = Number(req.headers[AT_HEADER]);
    const signature = String(req.headers[SIGNATURE_HEADER] ?? "");
    if (!match || (side !== "user" && side !== "device") || req.headers[HOP_HEADER] !== "1") return refuse(socket, 404, "Not found");
    if (!isHopSignature(services.jwtKey, match[1], side, at, signature)) return refuse(socket, 401, "Invalid relay signature");
    void services.prisma.remoteConnection
      .findFirst({ where: { id: match[1], sessionId }, select: { relayNode: true, endedAt: true } })
      .then((row) => {
        if (!row || row.endedAt) return refuse(socket, 404, "No such stream");
        // The stream is relayed elsewhere: a second hop is refused, never made.
        if (row.relayNode !== relayNode) return refuse(socket, 508, "This process is not the stream's relay");
        wss.handleUpgrade(req, socket, head, (ws) => {
          ws.on("error", () => undefined);
          ws.pause(); // as in join(): nothing is read before the stream listens
          void relay.streamOf(match[1], sessionId).then((stream) => (stream ? stream.attach(side, ws) : closeLeg(ws, 4000, "the session has ended")));
        });
      }, () => refuse(socket, 503, "The database is unavailable"));
  });

  server.on("upgrade", onUpgrade);
  const unclaim = claimUpgradePaths(server, (pathname) => USER_PATH.test(pathname) || DEVICE_PATH.test(pathname));
  const timers = joinTimers(services);
  timers.startSweeping();
  const unsubscribeEndings = subscribeToEndings(services);

  return {
    relayNode,
    close: async () => {
      server.off("upgrade", onUpgrade);
      unclaim();
      unsubscribeEndings();
      timers.close();
      remoteWaitsOf(services).closeAll();
      await relay.stop();
      for (const ws of wss.clients) ws.terminate();
      wss.close();
      internal.closeAllConnections();
      await new Promise((r) => internal.close(r));
      remoteSignalsOf(services).close();
    },
  };
}
