// Sign-in with e-mail and password: server-side sessions holding a hashed, rotating refresh
// token, and short-lived HS256 access tokens that name their session.
import type { DbTx } from "../../db/client.js";
import type { Services } from "../../services.js";
import type { RequestInfo } from "../../trpc/context.js";
import { randomToken, sha256Hex, verifyPassword } from "../../lib/crypto.js";
import { signAccessToken } from "../../trpc/auth.js";
import { writeAudit } from "../../trpc/audit.js";
import { conflict, notFound, unauthorized } from "../../trpc/errors.js";
import type { Principal } from "../../trpc/principal.js";
import { endTenantSwitch } from "../../trpc/tenant-switch.js";
import { touchOrganization } from "../../trpc/activity.js";
import { consume, isBlocked } from "../../lib/rate-limit.js";
import { TRPCError } from "@trpc/server";
import { SESSION_COOKIE_PREFIX } from "../../trpc/session-cookie.js";

const REFRESH_PREFIX = "fmr_";
/** the secret that activates a native client's pending session (never a usable refresh token) */
const ACTIVATION_PREFIX = "fma_";

export interface TokenPair {
  accessToken: string;
  tokenType: "Bearer";
  expiresAt: string;
  refreshToken: string;
}

/** The organization a new session acts in: the one asked for, else the oldest membership. */
async function sessionOrganization(db: DbTx, user: { id: string; isSuperAdmin: boolean }, wanted?: string) {
  if (wanted) {
    const ok = user.isSuperAdmin
      ? await db.organization.findUnique({ where: { id: wanted }, select: { id: true } })
      : await db.membership.findUnique({ where: { organizationId_userId: { organizationId: wanted, userId: user.id } } });
    if (ok) return wanted;
  }
  const first = await db.membership.findFirst({ where: { userId: user.id }, orderBy: { createdAt: "asc" } });
  if (first) return first.organizationId;
  if (user.isSuperAdmin) {
    const org = await db.organization.findFirst({ orderBy: { createdAt: "asc" }, select: { id: true } });
    return org?.id ?? null;
  }
  return null;
}

async function issueTokens(services: Services, session: { id: string; userId: string }, credentialsVersion: number, refreshToken: string): Promise<TokenPair> {
  const { token, expiresAt } = await signAccessToken(services, { userId: session.userId, sessionId: session.id, credentialsVersion });
  return { accessToken: token, tokenType: "Bearer", expiresAt: expiresAt.toISOString(), refreshToken };
}

/**
 * Guessing is capped per account and per source address; only failures spend the budget,
 * and a spent budget refuses even the right password until it refills.
 */
async function assertLoginAllowed(services: Services, email: string, sourceIp: string | null) {
  const { loginByAccount, loginBySource } = services.rateLimits;
  const wait = (await isBlocked(loginByAccount, email)) ?? (await isBlocked(loginBySource, sourceIp ?? "unknown"));
  if (wait !== null) throw new LoginThrottled(wait);
}

async function recordLoginFailure(services: Services, email: string, sourceIp: string | null) {
  const { loginByAccount, loginBySource } = services.rateLimits;
  await Promise.all([
    consume(loginByAccount, email).catch(() => undefined),
    consume(loginBySource, sourceIp ?? "unknown").catch(() => undefined),
  ]);
}

export class LoginThrottled extends TRPCError {
  constructor(readonly retryAfterSeconds: number) {
    super({ code: "TOO_MANY_REQUESTS", message: `Too many failed sign-ins; retry after ${retryAfterSeconds} s` });
  }
}

/** The user whose e-mail and password these are; a refusal is audited, throttled and says nothing of which part was wrong. */
export async function checkPassword(services: Services, request: RequestInfo, input: { email: string; password: string }) {
  const db = services.prisma;
  const email = input.email.trim().toLowerCase();
  await assertLoginAllowed(services, email, request.sourceIp);
  const user = await db.user.findUnique({ where: { email } });
  const valid = await verifyPassword(input.password, user?.passwordHash);
  if (!user || !valid || user.status !== "active") {
    await recordLoginFailure(services, email, request.sourceIp);
    await writeAudit(db, request, null, {
      action: "auth.login",
      outcome: "failure",
      // a known user's refused sign-in belongs to the organization they would have acted in,
      // so that its administrators see it in their audit log and activity feed
      organizationId: user ? await sessionOrganization(db, user) : null,
      entityType: "user",
      entityId: user?.id ?? null,
      message: user ? (valid ? "user is disabled" : "wrong password") : "unknown e-mail",
      actor: { type: "user", id: user?.id ?? null, userId: user?.id ?? null },
    });
    // Same answer for every cause: which part was wrong is not revealed.
    throw unauthorized("Invalid e-mail or password");
  }
  return user;
}

export async function login(services: Services, request: RequestInfo, input: { email: string; password: string; organizationId?: string }): Promise<TokenPair> {
  return startSession(services, request, await checkPassword(services, request, input), input.organizationId);
}

type ProvenUser = { id: string; isSuperAdmin: boolean; credentialsVersion: number };

/**
 * Opens a session for a user who proved who they are (password here, an OIDC ID token in
 * src/modules/federation): the session row and the sign-in audit entry, in one transaction.
 */
async function openSession(
  services: Services,
  request: RequestInfo,
  user: ProvenUser,
  secrets: { refreshTokenHash: string; cookieTokenHash?: string },
  wantedOrganizationId?: string,
  message?: string,
  expiresAt = new Date(Date.now() + services.config.REFRESH_TOKEN_TTL_DAYS * 86_400_000),
) {
  const db = services.prisma;
  const session = await db.$transaction(async (tx) => {
    const organizationId = await sessionOrganization(tx, user, wantedOrganizationId);
    const created = await tx.session.create({
      data: {
        userId: user.id,
        organizationId,
        ...secrets,
        userAgent: request.userAgent,
        ipAddress: request.sourceIp,
        expiresAt,
      },
    });
    await tx.user.update({ where: { id: user.id }, data: { lastLoginAt: new Date(), lastActivityAt: new Date() } });
    await writeAudit(tx, request, null, {
      action: "auth.login",
      outcome: "success",
      organizationId,
      entityType: "session",
      entityId: created.id,
      message: message ?? null,
      actor: { type: "user", id: user.id, userId: user.id },
    });
    return created;
  });
  // a sign-in is activity in the organization the session acts in
  if (session.organizationId) touchOrganization(services, session.organizationId);
  return session;
}

/** A session for an API client: a bearer access token and a rotating refresh token. */
export async function startSession(services: Services, request: RequestInfo, user: ProvenUser, wantedOrganizationId?: string, message?: string): Promise<TokenPair> {
  const refreshToken = randomToken(REFRESH_PREFIX, 48);
  const session = await openSession(services, request, user, { refreshTokenHash: sha256Hex(refreshToken) }, wantedOrganizationId, message);
  return issueTokens(services, session, user.credentialsVersion, refreshToken);
}

/**
 * A session for the browser console: its secret goes into an HttpOnly cookie
 * (src/trpc/session-cookie.ts), never into the page. It has no usable refresh token.
 */
export async function startCookieSession(services: Services, request: RequestInfo, user: ProvenUser, wantedOrganizationId?: string, message?: string) {
  const secret = randomToken(SESSION_COOKIE_PREFIX, 48);
  const session = await openSession(services, request, user, {
    refreshTokenHash: sha256Hex(randomToken(REFRESH_PREFIX, 48)), // never shown: cookie sessions do not refresh
    cookieTokenHash: sha256Hex(secret),
  }, wantedOrganizationId, message);
  return { secret, expiresAt: session.expiresAt, organizationId: session.organizationId };
}

/**
 * A session for a native client that signed in through the browser (src/modules/auth/
 * native-sign-in.ts), opened when the provider vouched for the user and dormant until the
 * client exchanges its one-time code: its refresh token hash is that of `activation`, a secret
 * that only the (encrypted) code carries, so no token of it exists yet, and it expires in
 * `ttlSeconds` unless activated. The sign-in is audited now, as every other.
 */
export async function startPendingSession(services: Services, request: RequestInfo, user: ProvenUser, ttlSeconds: number, message: string) {
  const activation = randomToken(ACTIVATION_PREFIX, 48);
  const session = await openSession(services, request, user, { refreshTokenHash: sha256Hex(activation) }, undefined, message, new Date(Date.now() + ttlSeconds * 1000));
  return { sessionId: session.id, activation, expiresAt: session.expiresAt };
}

/**
 * Activates a pending session (startPendingSession) once: one conditional update swaps the
 * activation's hash for a new refresh token's and gives the session its full life, so of two
 * exchanges of one code exactly one wins. Answers the token pair, or why nothing was issued.
 */
export async function activatePendingSession(
  services: Services,
  request: RequestInfo,
  pending: { sessionId: string; activation: string },
): Promise<TokenPair | "used" | "ended" | "expired"> {
  const db = services.prisma;
  const activationHash = sha256Hex(pending.activation);
  const refreshToken = randomToken(REFRESH_PREFIX, 48);
  const now = new Date();
  const activated = await db.session.updateMany({
    where: { id: pending.sessionId, refreshTokenHash: activationHash, revokedAt: null, expiresAt: { gt: now }, user: { status: "active" } },
    data: {
      refreshTokenHash: sha256Hex(refreshToken),
      expiresAt: new Date(now.getTime() + services.config.REFRESH_TOKEN_TTL_DAYS * 86_400_000),
      lastUsedAt: now,
      // the session is the client's from now on, not the browser's that signed in
      ipAddress: request.sourceIp,
      userAgent: request.userAgent,
    },
  });
  const session = await db.session.findUnique({ where: { id: pending.sessionId }, include: { user: { select: { status: true, credentialsVersion: true } } } });
  if (activated.count === 1 && session) return issueTokens(services, session, session.user.credentialsVersion, refreshToken);
  if (!session) return "ended"; // the user was deleted meanwhile
  if (session.refreshTokenHash !== activationHash) return "used";
  if (session.revokedAt || session.user.status !== "active") return "ended";
  return "expired";
}

export async function refresh(services: Services, request: RequestInfo, refreshToken: string): Promise<TokenPair> {
  const db = services.prisma;
  const next = randomToken(REFRESH_PREFIX, 48);
  // Rotation is one conditional update: a refresh token works once, even under a race.
  const session = await db.session.findUnique({ where: { refreshTokenHash: sha256Hex(refreshToken) }, include: { user: true } });
  if (!session || session.revokedAt || session.expiresAt <= new Date() || session.user.status !== "active") {
    throw unauthorized("Invalid or expired refresh token");
  }
  const rotated = await db.session.updateMany({
    where: { id: session.id, refreshTokenHash: session.refreshTokenHash, revokedAt: null },
    data: { refreshTokenHash: sha256Hex(next), lastUsedAt: new Date(), ipAddress: request.sourceIp, userAgent: request.userAgent },
  });
  if (rotated.count !== 1) throw unauthorized("Invalid or expired refresh token");
  return issueTokens(services, session, session.user.credentialsVersion, next);
}

export async function logout(db: DbTx, sessionId: string | null, refreshToken?: string) {
  const where = sessionId ? { id: sessionId } : refreshToken ? { refreshTokenHash: sha256Hex(refreshToken) } : null;
  if (!where) return { revoked: 0 };
  const result = await db.session.updateMany({ where: { ...where, revokedAt: null }, data: { revokedAt: new Date() } });
  return { revoked: result.count };
}

/**
 * The organization switcher of a member of several organizations: the session acts in
 * another of them from now on (an open tenant switch ends first). Not a way in for anyone
 * else: another organization is a 404, exactly as if it did not exist.
 */
export async function actInOrganization(db: DbTx, principal: Principal & { sessionId: string }, organizationId: string) {
  const membership = await db.membership.findUnique({
    where: { organizationId_userId: { organizationId, userId: principal.userId } },
    select: { organization: { select: { name: true, status: true } } },
  });
  // the same answer whether the organization exists or not (notFound() would say "not found" twice)
  if (!membership) throw new TRPCError({ code: "NOT_FOUND", message: "Organization not found among your memberships" });
  const { organization } = membership;
  if (organization.status !== "active" && !principal.isSuperAdmin) {
    throw conflict(`Organization "${organization.name}" is ${organization.status}; it cannot be used until it is enabled again`);
  }
  const open = await db.tenantSwitch.findFirst({ where: { sessionId: principal.sessionId, endedAt: null } });
  if (open) await endTenantSwitch(db, open, "returned");
  await db.session.update({ where: { id: principal.sessionId }, data: { organizationId } });
  return { organizationId };
}
