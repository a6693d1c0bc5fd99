// The user side of remote sessions: open, list, get, close, tickets, the recording and the
// organization's settings (docs/remote-access.md). The legs and their relay are in ./relay.ts
// and ./upgrade.ts; the end of a session, whatever ends it, in ./lifecycle.ts.
import type { Prisma } from "../../generated/prisma/client.js";
import type { Db, DbTx } from "../../db/client.js";
import type { Services } from "../../services.js";
import type { Principal } from "../../trpc/principal.js";
import { can } from "../../trpc/principal.js";
import { conflict, forbidden, invalidField, notFound } from "../../trpc/errors.js";
import { pageOf } from "../../lib/paging.js";
import { matchesSelector, remoteAccessOf, type RemoteAccessSettings } from "./settings.js";
import { KIND_PERMISSION, toRemoteSessionDto, type OpenInput, type RemoteKind } from "./schemas.js";
import { newTicket } from "./tokens.js";

export const STREAM_PATH = /^\/api\/v1\/remote-sessions\/([0-9a-f-]{36})\/stream$/;
export const streamUrlOf = (sessionId: string, ticket: string) => `/api/v1/remote-sessions/${sessionId}/stream?ticket=${ticket}`;

const LIVE = ["pending", "active"];

export async function policyOf(db: DbTx, organizationId: string): Promise<RemoteAccessSettings> {
  const org = await db.organization.findUnique({ where: { id: organizationId }, select: { settings: true } });
  return remoteAccessOf(org?.settings);
}

/** Why a device cannot be reached now (409), or null. */
export function refusalOf(policy: RemoteAccessSettings, device: { status: string; lastSeenAt: Date | null; labels: unknown }): string | null {
  if (!policy.enabled) return "Remote access is off for this organization (settings.remoteAccess.enabled)";
  if (!matchesSelector(policy, device.labels)) return `The device does not match the organization's remote-access selector (${policy.deviceSelector})`;
  if (device.status !== "online" && device.status !== "error") {
    return `The device is offline (last seen ${device.lastSeenAt ? device.lastSeenAt.toISOString() : "never"}): it cannot be reached until it reports again`;
  }
  return null;
}

export interface OpenResult {
  session: Awaited<ReturnType<Db["remoteSession"]["create"]>>;
  connectionId: string;
  ticket: string;
  ticketExpiresAt: Date;
}

/** Checks policy, device, reason and limits, then stores the pending session and its first connection. */
export async function openSession(db: DbTx, principal: Principal, input: OpenInput, now = new Date()): Promise<OpenResult> {
  const device = await db.device.findFirst({
    where: { id: input.deviceId, organizationId: principal.organizationId },
    select: { id: true, status: true, lastSeenAt: true, labels: true },
  });
  if (!device) throw notFound("Device");
  const policy = await policyOf(db, principal.organizationId);
  const refusal = refusalOf(policy, device);
  if (refusal) throw conflict(refusal);
  if (policy.requireReason && !input.reason) throw invalidField("reason", "reason: required: this organization asks why for every remote session");

  // Limits hold under concurrent opens: one opener per device and per user at a time.
  await db.$executeRaw`SELECT pg_advisory_xact_lock(hashtext(${"remote-device:" + device.id}))`;
  await db.$executeRaw`SELECT pg_advisory_xact_lock(hashtext(${"remote-user:" + principal.userId}))`;
  const [forDevice, forUser] = await Promise.all([
    db.remoteSession.count({ where: { deviceId: device.id, state: { in: LIVE } } }),
    db.remoteSession.count({ where: { userId: principal.userId, state: { in: LIVE } } }),
  ]);
  if (forDevice >= policy.maxSessionsPerDevice) throw conflict(`The device has ${forDevice} open remote sessions, the organization's limit (maxSessionsPerDevice ${policy.maxSessionsPerDevice})`);
  if (forUser >= policy.maxSessionsPerUser) throw conflict(`You have ${forUser} open remote sessions, the organization's limit (maxSessionsPerUser ${policy.maxSessionsPerUser})`);

  const kind = input.kind;
  const tty = input.tty ?? kind === "shell";
  const ticket = newTicket(now);
  const session = await db.remoteSession.create({
    data: {
      organizationId: principal.organizationId,
      deviceId: device.id,
      userId: principal.userId,
      apiKeyId: principal.apiKeyId,
      authSessionId: principal.sessionId,
      kind,
      reason: input.reason || null,
      command: input.command ?? [],
      tty: kind === "shell" || kind === "exec" ? tty : false,
      cols: input.cols ?? null,
      rows: input.rows ?? null,
      timeoutSeconds: kind === "exec" ? input.timeoutSeconds ?? null : null,
      target: kind === "port-forward" && input.target ? (input.target as Prisma.InputJsonObject) : undefined,
      path: kind === "file-read" || kind === "file-write" ? input.path ?? null : null,
      size: kind === "file-write" && input.size !== undefined ? BigInt(input.size) : null,
      mode: kind === "file-write" ? input.mode ?? null : null,
      sha256: kind === "file-write" ? input.sha256 ?? null : null,
      createdAt: now,
      joinDeadline: new Date(now.getTime() + policy.joinTimeoutSeconds * 1000),
      expiresAt: new Date(now.getTime() + policy.maxDurationSeconds * 1000),
      idleTimeoutSeconds: policy.idleTimeoutSeconds,
      recorded: kind === "shell" && policy.recordShell,
      connections: { create: { deviceId: device.id, ticketHash: ticket.hash, ticketExpiresAt: ticket.expiresAt, createdAt: now } },
    },
    include: { connections: { select: { id: true } } },
  });
  const { connections, ...row } = session;
  return { session: row, connectionId: connections[0].id, ticket: ticket.ticket, ticketExpiresAt: ticket.expiresAt };
}

/** A session of the caller's organization (404 otherwise). */
export async function getSession(db: DbTx, organizationId: string, id: string) {
  const session = await db.remoteSession.findFirst({ where: { id, organizationId } });
  if (!session) throw notFound("Remote session");
  return session;
}

export async function listSessions(db: DbTx, organizationId: string, input: { limit: number; offset: number; deviceId?: string; userId?: string; state?: string; kind?: string }) {
  const where: Prisma.RemoteSessionWhereInput = {
    organizationId,
    ...(input.deviceId ? { deviceId: input.deviceId } : {}),
    ...(input.userId ? { userId: input.userId } : {}),
    ...(input.state ? { state: input.state } : {}),
    ...(input.kind ? { kind: input.kind } : {}),
  };
  const [items, total] = await Promise.all([
    db.remoteSession.findMany({ where, orderBy: [{ createdAt: "desc" }, { id: "asc" }], take: input.limit, skip: input.offset }),
    db.remoteSession.count({ where }),
  ]);
  return pageOf(items.map(toRemoteSessionDto), total, input.offset);
}

/** Own session: whoever opened it; another's: remote:manage. */
export function mayClose(principal: Principal, session: { userId: string }): boolean {
  return session.userId === principal.userId || can(principal, "remote:manage");
}

/** A new connection of the caller's own live session: port-forward opens one per TCP connection; the others may renew an unused ticket. */
export async function newConnection(db: DbTx, principal: Principal, sessionId: string, now = new Date()) {
  const session = await getSession(db, principal.organizationId, sessionId);
  if (session.userId !== principal.userId) throw forbidden("Only the person who opened a remote session may connect to it");
  if (!can(principal, KIND_PERMISSION[session.kind as RemoteKind])) throw forbidden(`Missing permission ${KIND_PERMISSION[session.kind as RemoteKind]}`);
  if (session.state === "ended") throw conflict(`The remote session has ended (${session.endReason})`);
  const ticket = newTicket(now);
  if (session.kind === "port-forward") {
    if (session.state !== "active" && now > session.joinDeadline) throw conflict("The device has not joined the session");
    const connection = await db.remoteConnection.create({
      data: { sessionId, deviceId: session.deviceId, ticketHash: ticket.hash, ticketExpiresAt: ticket.expiresAt, createdAt: now },
      select: { id: true },
    });
    return { session, connectionId: connection.id, ticket: ticket.ticket, ticketExpiresAt: ticket.expiresAt, offered: true };
  }
  // One stream only: a ticket not used yet (it expired before the client connected) is replaced.
  const renewed = await db.remoteConnection.updateManyAndReturn({
    where: { sessionId, userJoinedAt: null, endedAt: null },
    data: { ticketHash: ticket.hash, ticketExpiresAt: ticket.expiresAt },
    select: { id: true },
  });
  if (!renewed[0]) throw conflict("The session's stream is already connected: a shell, exec or file copy has one stream");
  return { session, connectionId: renewed[0].id, ticket: ticket.ticket, ticketExpiresAt: ticket.expiresAt, offered: false };
}

/** The organization's settings with the remote-access policy replaced (validated by the caller's schema). */
export async function updatePolicy(db: DbTx, organizationId: string, change: Partial<RemoteAccessSettings>) {
  const org = await db.organization.findUniqueOrThrow({ where: { id: organizationId }, select: { settings: true } });
  const before = remoteAccessOf(org.settings);
  const after = { ...before, ...change };
  const settings = { ...((org.settings as Record<string, unknown> | null) ?? {}), remoteAccess: after };
  await db.organization.update({ where: { id: organizationId }, data: { settings: settings as Prisma.InputJsonObject } });
  return { before, after };
}
