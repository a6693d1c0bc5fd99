// Device authentication for /api/v1/agent/*: `Authorization: Bearer <JWT>` signed with the
// device's private key. The JWT header names the certificate (`x5t#S256`, the SHA-256
// fingerprint of its DER), `sub` is the device id and the token lives at most five minutes.
// It is verified with jose against the public key of that stored certificate, with the
// algorithm pinned to the key type (no algorithm confusion).
//
// Agent operations accept nothing else (an API key or a user's token is a 401), and device
// tokens work nowhere else: the management authentication only knows HS256 session tokens.
//
// Verified certificates are cached in process (parsing a certificate and importing its key
// is the expensive part). An entry is re-checked against the database (revoked? expired?
// organization still active?) once it is older than DEVICE_AUTH_RECHECK_SECONDS, so a
// revocation takes effect within that many seconds in every process. Procedures whose own
// statement re-checks the certificate (the heartbeat) skip that query.
import { decodeProtectedHeader, jwtVerify, errors as joseErrors } from "jose";
import type { IncomingHttpHeaders } from "node:http";
import type { Db, DbTx } from "../db/client.js";
import type { DeviceCertificate } from "../generated/prisma/client.js";
import type { Services } from "../services.js";
import type { KeyObject } from "node:crypto";
import { certificateVerifier, type JwsAlgorithm } from "../lib/pki/index.js";
import { writeAudit } from "./audit.js";
import type { RequestInfo } from "./context.js";
import { forbidden, translateDatabaseError, unauthorized } from "./errors.js";
import { t } from "./init.js";
import { chargeUnprovenCredential, limitCaller } from "./caller-budgets.js";
import type { Response } from "express";
import { perService } from "../lib/per-service.js";
import { traceProcedure } from "./tracing.js";
import { touchOrganization } from "./activity.js";
import { TRPCError } from "@trpc/server";

/**
 * Why certificates of deleted (decommissioned) devices are revoked: one of the spec's seven
 * reasons. Here, not in the devices module, because device authentication tells a decommissioned
 * device's agent so by it, and src/trpc imports no domain module.
 */
export const DELETED_DEVICE_REASON = "Cessation of operation";

/** Longest lifetime a device token may have (exp - now, and exp - iat when iat is given). */
export const MAX_DEVICE_TOKEN_LIFETIME_SECONDS = 300;
const CLOCK_TOLERANCE_SECONDS = 30;
const ACCEPTED_ALGORITHMS = new Set<string>(["ES256", "ES384", "EdDSA", "RS256"]);

/** Who is calling an agent operation. */
export interface DevicePrincipal {
  kind: "device";
  deviceId: string;
  organizationId: string;
  certificateId: string;
  /** SHA-256 of the certificate DER, lowercase hex */
  fingerprint: string;
  certificateNotAfter: Date;
}

interface CacheEntry {
  fingerprint: string;
  certificateId: string;
  deviceId: string;
  organizationId: string;
  key: KeyObject;
  algorithm: JwsAlgorithm;
  notBefore: Date;
  notAfter: Date;
  /** when the database last confirmed the certificate valid and the organization active */
  checkedAt: number;
  loadedAt: number;
  /**
   * The last token verified against this certificate. Agents reuse a token for minutes; a
   * byte-identical token needs no second signature check, only its expiry.
   */
  lastToken?: { value: string; exp: number };
}

export class DeviceAuthFailure extends Error {
  constructor(
    readonly code: "UNAUTHORIZED" | "FORBIDDEN",
    message: string,
    readonly device?: { id: string; organizationId: string },
    /** the device was deleted (decommissioned): its agent is told to wipe its identity (DECOMMISSIONED_HEADER) */
    readonly decommissioned = false,
  ) {
    super(message);
  }
}

/**
 * Answered (with the 401) to the holder of a deleted device's certificate, once it proved it
 * holds the key: the agent wipes its identity and stops (docs/admission.md, "Decommission").
 */
export const DECOMMISSIONED_HEADER = "Fleet-Device-Decommissioned";
const DECOMMISSIONED_MESSAGE = "This device was decommissioned (deleted or rejected): its certificate is revoked; wipe the identity and stop";

/**
 * Whether the certificate belongs to a device that no longer exists and was revoked for it
 * (Cessation of operation), and the token is signed with its key: only the device itself learns
 * that it was decommissioned. Runs on the refusal path only.
 */
async function decommissionedHolder(prisma: Db, fingerprint: string, token: string | null): Promise<boolean> {
  const cert = await prisma.deviceCertificate.findUnique({ where: { fingerprint }, select: { revoked: true, revokeReason: true, deviceId: true, certificatePem: true } });
  if (!cert?.revoked || cert.revokeReason !== DELETED_DEVICE_REASON) return false;
  if (await prisma.device.findUnique({ where: { id: cert.deviceId }, select: { id: true } })) return false;
  if (token === null) return true; // the caller verified the token against this certificate already
  try {
    const { key, algorithm } = certificateVerifier(cert.certificatePem);
    await jwtVerify(token, key, { algorithms: [algorithm], subject: cert.deviceId, clockTolerance: CLOCK_TOLERANCE_SECONDS });
    return true;
  } catch {
    return false;
  }
}

export interface DeviceAuthCacheOptions {
  maxEntries: number;
  /** re-check validity in the database when the last check is older than this */
  recheckMs: number;
  /** drop the parsed key after this long (bounded staleness of everything else) */
  ttlMs: number;
}

export class DeviceAuthCache {
  // Map keeps insertion order: re-inserting on use makes it a small LRU.
  private readonly entries = new Map<string, CacheEntry>();

  constructor(private readonly options: DeviceAuthCacheOptions) {}

  get size() {
    return this.entries.size;
  }

  peek(fingerprint: string, now = Date.now()): CacheEntry | undefined {
    const entry = this.entries.get(fingerprint);
    if (!entry) return undefined;
    if (now - entry.loadedAt > this.options.ttlMs) {
      this.entries.delete(fingerprint);
      return undefined;
    }
    this.entries.delete(fingerprint);
    this.entries.set(fingerprint, entry);
    return entry;
  }

  put(entry: CacheEntry) {
    this.entries.delete(entry.fingerprint);
    this.entries.set(entry.fingerprint, entry);
    while (this.entries.size > this.options.maxEntries) {
      const oldest = this.entries.keys().next().value;
      if (oldest === undefined) break;
      this.entries.delete(oldest);
    }
  }

  needsRecheck(entry: CacheEntry, now = Date.now()) {
    return now - entry.checkedAt >= this.options.recheckMs;
  }

  evictFingerprint(fingerprint: string) {
    this.entries.delete(fingerprint);
  }

  /** Immediate effect in this process when devices are deleted (other processes: within recheckMs). */
  evictDevices(deviceIds: Iterable<string>) {
    const doomed = new Set(deviceIds);
    if (doomed.size === 0) return;
    for (const [fingerprint, entry] of this.entries) if (doomed.has(entry.deviceId)) this.entries.delete(fingerprint);
  }

  clear() {
    this.entries.clear();
  }
}

/** The cache of one running service. */
export const deviceAuthCacheOf = perService(
  (services: Services) =>
    new DeviceAuthCache({
      maxEntries: services.config.DEVICE_AUTH_CACHE_SIZE,
      recheckMs: services.config.DEVICE_AUTH_RECHECK_SECONDS * 1000,
      ttlMs: 10 * 60_000,
    }),
);

/** `x5t#S256` is base64url of the SHA-256 of the DER (RFC 7515); lowercase hex is accepted too. */
export function fingerprintFromX5t(value: string): string | null {
  if (/^[A-Za-z0-9_-]{43}$/.test(value)) return Buffer.from(value, "base64url").toString("hex");
  const hex = value.replace(/:/g, "").toLowerCase();
  return /^[0-9a-f]{64}$/.test(hex) ? hex : null;
}

/**
 * The certificate with this SHA-256 fingerprint when it is neither revoked nor outside its
 * validity, else null. Accepts lowercase or uppercase hex (colons allowed) or the base64url
 * form of a JWS `x5t#S256` header.
 */
export async function findValidCertificateByFingerprint(db: DbTx, fingerprint: string): Promise<DeviceCertificate | null> {
  const hex = fingerprintFromX5t(fingerprint);
  if (!hex) return null;
  const cert = await db.deviceCertificate.findUnique({ where: { fingerprint: hex } });
  const now = new Date();
  if (!cert || cert.revoked || cert.notBefore > now || cert.notAfter <= now) return null;
  return cert;
}

function bearerOf(headers: IncomingHttpHeaders): string {
  if (typeof headers["x-api-key"] === "string" && headers["x-api-key"].length > 0) {
    throw new DeviceAuthFailure("UNAUTHORIZED", "Agent operations take a device token (Authorization: Bearer <JWT signed by the device key>), not an API key");
  }
  const authorization = headers.authorization;
  if (typeof authorization !== "string") throw new DeviceAuthFailure("UNAUTHORIZED", "Device token required: Authorization: Bearer <JWT signed by the device key>");
  const match = /^Bearer\s+(\S+)$/i.exec(authorization.trim());
  if (!match) throw new DeviceAuthFailure("UNAUTHORIZED", "Authorization header must be 'Bearer <device token>'");
  return match[1];
}

async function loadEntry(prisma: Db, fingerprint: string): Promise<CacheEntry | null> {
  const cert = await findValidCertificateByFingerprint(prisma, fingerprint);
  if (!cert) return null;
  const org = await prisma.organization.findUnique({ where: { id: cert.organizationId }, select: { status: true, name: true } });
  if (!org) return null;
  if (org.status !== "active") throw new DeviceAuthFailure("FORBIDDEN", `Organization "${org.name}" is ${org.status}; its devices are refused until it is enabled again`, { id: cert.deviceId, organizationId: cert.organizationId });
  const now = Date.now();
  return {
    fingerprint: cert.fingerprint,
    certificateId: cert.id,
    deviceId: cert.deviceId,
    organizationId: cert.organizationId,
    ...certificateVerifier(cert.certificatePem),
    notBefore: cert.notBefore,
    notAfter: cert.notAfter,
    checkedAt: now,
    loadedAt: now,
  };
}

/** One indexed lookup: is the certificate still unrevoked and its organization active? */
async function recheck(prisma: Db, entry: CacheEntry): Promise<boolean> {
  const rows = await prisma.$queryRaw<{ revoked: boolean; status: string }[]>`
    SELECT c."revoked", o."status" FROM "DeviceCertificate" c JOIN "Organization" o ON o."id" = c."organizationId"
     WHERE c."fingerprint" = ${entry.fingerprint}`;
  const row = rows[0];
  if (!row || row.revoked) return false;
  if (row.status !== "active") throw new DeviceAuthFailure("FORBIDDEN", `The device's organization is ${row.status}`, { id: entry.deviceId, organizationId: entry.organizationId });
  entry.checkedAt = Date.now();
  return true;
}

/** Whether certificate problems of a known device are audited (unknown fingerprints are not: nothing to attribute). */
async function knownDeviceOf(prisma: Db, fingerprint: string) {
  const cert = await prisma.deviceCertificate.findUnique({ where: { fingerprint }, select: { deviceId: true, organizationId: true, revoked: true } });
  return cert ? { id: cert.deviceId, organizationId: cert.organizationId, revoked: cert.revoked } : null;
}

export async function authenticateDevice(
  services: Services,
  headers: IncomingHttpHeaders,
  options: { recheck: boolean } = { recheck: true },
): Promise<DevicePrincipal> {
  const token = bearerOf(headers);
  let header: ReturnType<typeof decodeProtectedHeader>;
  try {
    header = decodeProtectedHeader(token);
  } catch {
    throw new DeviceAuthFailure("UNAUTHORIZED", "Device token is not a JWT");
  }
  const x5t = header["x5t#S256"];
  if (typeof x5t !== "string") throw new DeviceAuthFailure("UNAUTHORIZED", "Device token must name its certificate in the x5t#S256 header");
  if (typeof header.alg !== "string" || !ACCEPTED_ALGORITHMS.has(header.alg)) {
    throw new DeviceAuthFailure("UNAUTHORIZED", "Device token must be signed with ES256, ES384, EdDSA or RS256");
  }
  const fingerprint = fingerprintFromX5t(x5t);
  if (!fingerprint) throw new DeviceAuthFailure("UNAUTHORIZED", "x5t#S256 is not a SHA-256 certificate fingerprint");

  const { prisma } = services;
  const cache = deviceAuthCacheOf(services);
  let entry = cache.peek(fingerprint);
  if (entry && options.recheck && cache.needsRecheck(entry) && !(await recheck(prisma, entry))) {
    cache.evictFingerprint(fingerprint);
    entry = undefined;
  }
  if (!entry) {
    const loaded = await loadEntry(prisma, fingerprint);
    if (!loaded) {
      const known = await knownDeviceOf(prisma, fingerprint);
      if (known?.revoked && (await decommissionedHolder(prisma, fingerprint, token))) throw new DeviceAuthFailure("UNAUTHORIZED", DECOMMISSIONED_MESSAGE, known, true);
      throw new DeviceAuthFailure(
        "UNAUTHORIZED",
        known?.revoked ? "Device certificate is revoked" : known ? "Device certificate is expired or not yet valid" : "Unknown device certificate",
        known ?? undefined,
      );
    }
    cache.put(loaded);
    entry = loaded;
  }
  const now = Date.now();
  if (entry.notAfter.getTime() <= now || entry.notBefore.getTime() > now + CLOCK_TOLERANCE_SECONDS * 1000) {
    cache.evictFingerprint(fingerprint);
    throw new DeviceAuthFailure("UNAUTHORIZED", "Device certificate is expired or not yet valid", { id: entry.deviceId, organizationId: entry.organizationId });
  }

  const device = { id: entry.deviceId, organizationId: entry.organizationId };
  const principal: DevicePrincipal = {
    kind: "device",
    deviceId: entry.deviceId,
    organizationId: entry.organizationId,
    certificateId: entry.certificateId,
    fingerprint: entry.fingerprint,
    certificateNotAfter: entry.notAfter,
  };
  const nowSeconds = Math.floor(now / 1000);
  if (entry.lastToken?.value === token) {
    if (entry.lastToken.exp + CLOCK_TOLERANCE_SECONDS > nowSeconds) return principal;
    throw new DeviceAuthFailure("UNAUTHORIZED", "Device token has expired", device);
  }
  let payload: { exp?: number; iat?: number };
  try {
    ({ payload } = await jwtVerify(token, entry.key, {
      algorithms: [entry.algorithm],
      subject: entry.deviceId,
      clockTolerance: CLOCK_TOLERANCE_SECONDS,
    }));
  } catch (err) {
    const why =
      err instanceof joseErrors.JWTExpired ? "Device token has expired"
      : err instanceof joseErrors.JWTClaimValidationFailed && err.claim === "sub" ? "Device token subject does not match its certificate"
      : err instanceof joseErrors.JWSSignatureVerificationFailed ? "Device token signature does not match its certificate"
      : "Invalid device token";
    throw new DeviceAuthFailure("UNAUTHORIZED", why, device);
  }
  if (typeof payload.exp !== "number") throw new DeviceAuthFailure("UNAUTHORIZED", "Device token must carry exp", device);
  if (
    payload.exp - nowSeconds > MAX_DEVICE_TOKEN_LIFETIME_SECONDS + CLOCK_TOLERANCE_SECONDS ||
    (typeof payload.iat === "number" && payload.exp - payload.iat > MAX_DEVICE_TOKEN_LIFETIME_SECONDS)
  ) {
    throw new DeviceAuthFailure("UNAUTHORIZED", `Device token lifetime exceeds ${MAX_DEVICE_TOKEN_LIFETIME_SECONDS} seconds`, device);
  }
  entry.lastToken = { value: token, exp: payload.exp };
  return principal;
}

/**
 * Why a handler's own re-check (the heartbeat statement) refused a device that passed
 * authentication a moment ago: its organization was suspended (403), or its certificate was
 * revoked or expired, or the device deleted (401). Runs on the failure path only. Evicts the
 * cached certificate.
 */
export async function refusalAfterRecheck(services: Services, device: DevicePrincipal) {
  deviceAuthCacheOf(services).evictFingerprint(device.fingerprint);
  const org = await services.prisma.organization.findUnique({ where: { id: device.organizationId }, select: { status: true, name: true } });
  if (org && org.status !== "active") return forbidden(`Organization "${org.name}" is ${org.status}; its devices are refused until it is enabled again`);
  // the token was verified against this certificate a moment ago
  if (await decommissionedHolder(services.prisma, device.fingerprint, null)) return decommissionedError();
  return unauthorized("Device certificate is no longer valid, or the device was deleted");
}

class Decommissioned extends Error {}

function decommissionedError() {
  return new TRPCError({ code: "UNAUTHORIZED", message: DECOMMISSIONED_MESSAGE, cause: new Decommissioned(DECOMMISSIONED_MESSAGE) });
}

/** Sets the decommission header on the answer when `err` says the device was decommissioned. */
export function markDecommissioned(res: { setHeader(name: string, value: string): unknown } | null, err: unknown) {
  if (res && err instanceof TRPCError && err.cause instanceof Decommissioned) res.setHeader(DECOMMISSIONED_HEADER, "true");
}

/** Refusals of a known device are audited (actor device), like refused API keys. */
export async function auditDeviceRefusal(services: Services, request: RequestInfo, path: string, failure: DeviceAuthFailure) {
  if (!failure.device) return;
  await writeAudit(services.prisma, request, null, {
    action: "auth.refused",
    outcome: "denied",
    organizationId: failure.device.organizationId,
    message: `${path}: ${failure.message}`,
    actor: { type: "device", id: failure.device.id },
  }).catch(() => undefined);
}

export function deviceFailureToTrpc(failure: DeviceAuthFailure) {
  return failure.code === "FORBIDDEN" ? forbidden(failure.message) : unauthorized(failure.message);
}

// ---- procedure builders (re-exported by procedures.ts) ---------------------------------
// Built from `t` directly, not from procedures.ts, so that procedures.ts can re-export them
// without an import cycle.

/** Same translation as procedures.ts: database errors with a meaning become 404/409/503. */
const translateErrors = t.middleware(async ({ next }) => {
  const result = await next();
  if (!result.ok && result.error.code === "INTERNAL_SERVER_ERROR") {
    const translated = translateDatabaseError(result.error.cause);
    if (translated) return { ...result, error: translated };
  }
  return result;
});

/**
 * authenticateDevice() for a request: a refusal is audited (known device) and spends the
 * source address's budget, then the device's own budget is spent (429 with Retry-After on
 * `res` once spent). Throws a TRPCError. Shared by the procedures and the lean heartbeat route.
 */
export async function authenticateDeviceRequest(
  services: Services,
  request: RequestInfo,
  headers: IncomingHttpHeaders,
  path: string,
  res: Response | null,
  options: { recheck: boolean },
): Promise<DevicePrincipal> {
  let device: DevicePrincipal;
  try {
    device = await authenticateDevice(services, headers, options);
  } catch (err) {
    if (!(err instanceof DeviceAuthFailure)) throw err;
    await auditDeviceRefusal(services, request, path, err);
    if (err.code === "UNAUTHORIZED") await chargeUnprovenCredential(services, headers, request.sourceIp, res);
    const refusal = err.decommissioned ? decommissionedError() : deviceFailureToTrpc(err);
    markDecommissioned(res, refusal);
    throw refusal;
  }
  await limitCaller(services, device, res);
  touchOrganization(services, device.organizationId);
  return device;
}

function deviceAuthenticated(recheck: boolean) {
  return t.middleware(async ({ ctx, path, next }) => {
    const device = await authenticateDeviceRequest(ctx.services, ctx.request, ctx.headers, path, ctx.res, { recheck });
    return next({ ctx: { device } });
  });
}

/**
 * Agent operations: a device authenticated by its token (`ctx.device`). No automatic audit
 * transaction: heartbeats and telemetry are not changes made by people; procedures that
 * change something of note (certificate renewal) write their own audit entry.
 */
export const deviceProcedure = t.procedure.use(traceProcedure).use(translateErrors).use(deviceAuthenticated(true));

/**
 * For procedures whose own single statement re-checks that the certificate is unrevoked and
 * unexpired (the heartbeat): skips the separate re-check query on the hot path. The handler
 * MUST check `ctx.device.fingerprint` in that statement and refuse (401) when it fails.
 */
export const deviceProcedureCheckedByHandler = t.procedure.use(traceProcedure).use(translateErrors).use(deviceAuthenticated(false));

export type DeviceContext = Parameters<Parameters<typeof deviceProcedure.query>[0]>[0]["ctx"];
