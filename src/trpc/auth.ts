// Authentication: X-API-Key or Authorization: Bearer <access token>. One function, used by
// the tRPC procedures and by the plain express routes (downloads, streams) alike.
import { jwtVerify, SignJWT } from "jose";
import type { IncomingHttpHeaders } from "node:http";
import type { Services } from "../services.js";
import type { Prisma } from "../generated/prisma/client.js";
import { sha256Hex } from "../lib/crypto.js";
import { forbidden, unauthorized } from "./errors.js";
import { grants, PLATFORM_ADMIN, WILDCARD } from "./permissions.js";
import type { Principal } from "./principal.js";
import { endSwitchAutomatically } from "./tenant-switch.js";
import { perService } from "../lib/per-service.js";
import { sessionCookieOf } from "./session-cookie.js";
import { touchApiKey, touchSession } from "./activity.js";

export const API_KEY_PREFIX = "fm_";
const TOKEN_ISSUER = "fleet-manager";

export class AuthFailure extends Error {
  constructor(
    readonly code: "UNAUTHORIZED" | "FORBIDDEN",
    message: string,
    /** what the audit log records as the refused actor, when known */
    readonly actor?: { type: "user" | "api_key"; id: string; organizationId?: string },
  ) {
    super(message);
  }
}

export async function signAccessToken(services: Services, claims: { userId: string; sessionId: string; credentialsVersion: number }) {
  const ttl = services.config.ACCESS_TOKEN_TTL_SECONDS;
  const expiresAt = new Date(Date.now() + ttl * 1000);
  const token = await new SignJWT({ sid: claims.sessionId, cv: claims.credentialsVersion })
    .setProtectedHeader({ alg: "HS256", typ: "JWT" })
    .setSubject(claims.userId)
    .setIssuer(TOKEN_ISSUER)
    .setIssuedAt()
    .setExpirationTime(expiresAt)
    .sign(services.jwtKey);
  return { token, expiresAt };
}

async function rolePermissions(services: Services, organizationId: string, userId: string): Promise<string[] | null> {
  const membership = await services.prisma.membership.findUnique({
    where: { organizationId_userId: { organizationId, userId } },
    select: { role: { select: { permissions: true } } },
  });
  return membership ? membership.role.permissions : null;
}

/**
 * What a user may do in an organization: their role's permissions; a Super Admin holds `*`
 * everywhere, plus what their own role there names. That matters for the permissions no
 * wildcard grants (a shell on a device, its files and ports: docs/remote-access.md): a Super
 * Admin reaches devices only where a role of theirs names it (their own organization, where
 * they are owner), never a tenant's by platform power. Null: no member and no Super Admin.
 */
async function permissionsIn(services: Services, organizationId: string, user: { id: string; isSuperAdmin: boolean }): Promise<string[] | null> {
  const role = await rolePermissions(services, organizationId, user.id);
  return user.isSuperAdmin ? [WILDCARD, ...(role ?? [])] : role;
}

function assertOrganizationUsable(org: { status: string; name: string }, isSuperAdmin: boolean) {
  // Super Admins keep access to suspended or disabled organizations so that they can restore them.
  if (org.status !== "active" && !isSuperAdmin) {
    throw new AuthFailure("FORBIDDEN", `Organization "${org.name}" is ${org.status}; it cannot be used until it is enabled again`);
  }
}

// Verified API keys are remembered for a few seconds per process: a management read then
// costs its own query, not four more for the key, its creator and the creator's role. Any
// change made through this process (every audited mutation) forgets them all at once, so
// revoking a key, disabling a user or changing a role takes effect here immediately and on
// the other processes within API_KEY_CACHE_MS (docs/scaling.md).
export const API_KEY_CACHE_MS = 5_000;
const MAX_CACHED_KEYS = 10_000;
const verifiedKeysOf = perService((_services: object) => new Map<string, { principal: Principal; until: number }>());

/** Forgets every remembered API key of this service (called after each committed change). */
export function forgetVerifiedApiKeys(services: object): void {
  verifiedKeysOf.peek(services)?.clear();
}

async function authenticateApiKey(services: Services, key: string): Promise<Principal> {
  const keyHash = sha256Hex(key);
  const cache = verifiedKeysOf(services);
  const now = Date.now();
  const hit = cache.get(keyHash);
  if (hit && hit.until > now) {
    touchApiKey(services, hit.principal.apiKeyId!, hit.principal.organizationId);
    return hit.principal;
  }
  const principal = await verifyApiKey(services, keyHash);
  if (cache.size >= MAX_CACHED_KEYS) cache.clear();
  cache.set(keyHash, { principal: principal.value, until: Math.min(now + API_KEY_CACHE_MS, principal.expiresAt ?? Infinity) });
  return principal.value;
}

async function verifyApiKey(services: Services, keyHash: string): Promise<{ value: Principal; expiresAt: number | null }> {
  const record = await services.prisma.apiKey.findUnique({
    where: { keyHash },
    include: {
      organization: { select: { id: true, name: true, status: true } },
    },
  });
  if (!record || record.revokedAt) throw new AuthFailure("UNAUTHORIZED", "Invalid API key");
  const actor = { type: "api_key" as const, id: record.id, organizationId: record.organizationId };
  if (record.expiresAt && record.expiresAt <= new Date()) throw new AuthFailure("UNAUTHORIZED", "API key has expired", actor);
  const creator = record.createdById
    ? await services.prisma.user.findUnique({ where: { id: record.createdById }, select: { id: true, status: true, isSuperAdmin: true } })
    : null;
  if (!creator || creator.status !== "active") {
    throw new AuthFailure("UNAUTHORIZED", "API key is no longer valid: its creator is disabled or removed", actor);
  }
  // A platform key names platform:admin (no wildcard grants it): a Super Admin's `*` key
  // made for a tenant stays inside that tenant.
  const isSuperAdmin = creator.isSuperAdmin && grants(record.permissions, PLATFORM_ADMIN);
  assertOrganizationUsable(record.organization, isSuperAdmin);
  const creatorPermissions = await permissionsIn(services, record.organizationId, creator);
  if (!creatorPermissions) {
    throw new AuthFailure("UNAUTHORIZED", "API key is no longer valid: its creator left the organization", actor);
  }
  touchApiKey(services, record.id, record.organizationId);
  return {
    value: {
      kind: "api_key",
      userId: creator.id,
      apiKeyId: record.id,
      sessionId: null,
      organizationId: record.organizationId,
      permissionSets: [new Set(record.permissions), new Set(creatorPermissions)],
      isSuperAdmin,
    },
    expiresAt: record.expiresAt?.getTime() ?? null,
  };
}

// What a session's checks need: its user, and its open tenant switch.
const SESSION_INCLUDE = {
  user: { select: { id: true, status: true, isSuperAdmin: true, credentialsVersion: true } },
  tenantSwitches: { where: { endedAt: null }, orderBy: { switchedAt: "desc" }, take: 1 },
} as const;

async function authenticateBearer(services: Services, token: string): Promise<Principal> {
  let claims: { sub?: string; sid?: unknown; cv?: unknown };
  try {
    ({ payload: claims } = await jwtVerify(token, services.jwtKey, { issuer: TOKEN_ISSUER, algorithms: ["HS256"] }));
  } catch {
    throw new AuthFailure("UNAUTHORIZED", "Invalid or expired access token");
  }
  const session = typeof claims.sid === "string"
    ? await services.prisma.session.findUnique({ where: { id: claims.sid }, include: SESSION_INCLUDE })
    : null;
  if (session && session.userId !== claims.sub) throw new AuthFailure("UNAUTHORIZED", "Session has ended; sign in again");
  // An access token dies with the credentials it was issued under (password change, disabling).
  return principalOfSession(services, session, (user) => user.credentialsVersion === claims.cv);
}

/** The console's cookie: the same sessions, found by the hash of the cookie's secret. */
async function authenticateSessionCookie(services: Services, secret: string): Promise<Principal> {
  const session = await services.prisma.session.findUnique({ where: { cookieTokenHash: sha256Hex(secret) }, include: SESSION_INCLUDE });
  // A password change ends the user's other sessions and keeps this one: no version to compare.
  return principalOfSession(services, session, () => true);
}

type SessionWithUser = Prisma.SessionGetPayload<{ include: typeof SESSION_INCLUDE }>;

async function principalOfSession(
  services: Services,
  session: SessionWithUser | null,
  credentialsCurrent: (user: SessionWithUser["user"]) => boolean,
): Promise<Principal> {
  if (!session || session.revokedAt || session.expiresAt <= new Date()) {
    throw new AuthFailure("UNAUTHORIZED", "Session has ended; sign in again");
  }
  const user = session.user;
  const actor = { type: "user" as const, id: user.id };
  if (user.status !== "active") throw new AuthFailure("UNAUTHORIZED", "User is disabled", actor);
  if (!credentialsCurrent(user)) throw new AuthFailure("UNAUTHORIZED", "Credentials changed; sign in again", actor);
  // A tenant switch acts in its target until it expires or the target can no longer be used;
  // either ends it here, by itself, and the session is back in its home organization.
  const open = session.tenantSwitches[0];
  let tenantSwitch = open && open.toOrgId === session.organizationId ? open : null;
  if (tenantSwitch && tenantSwitch.expiresAt <= new Date()) {
    await endSwitchAutomatically(services.prisma, tenantSwitch, "expired");
    session.organizationId = tenantSwitch.fromOrgId;
    tenantSwitch = null;
  }
  let acting: { org: { id: string }; permissions: string[] };
  try {
    acting = await actingIn(services, session.organizationId, user, actor);
  } catch (err) {
    if (!tenantSwitch || !(err instanceof AuthFailure)) throw err;
    await endSwitchAutomatically(services.prisma, tenantSwitch, "access_lost");
    acting = await actingIn(services, tenantSwitch.fromOrgId, user, actor);
    tenantSwitch = null;
  }
  const { org, permissions } = acting;
  touchSession(services, session.id, user.id, org.id);
  return {
    kind: "user",
    userId: user.id,
    apiKeyId: null,
    sessionId: session.id,
    organizationId: org.id,
    permissionSets: [new Set(permissions)],
    isSuperAdmin: user.isSuperAdmin,
    tenantSwitch: tenantSwitch ? { id: tenantSwitch.id, fromOrganizationId: tenantSwitch.fromOrgId } : null,
  };
}

/** The organization a session acts in and the user's permissions there; throws AuthFailure. */
async function actingIn(
  services: Services,
  organizationId: string | null,
  user: { id: string; isSuperAdmin: boolean },
  actor: { type: "user"; id: string },
) {
  if (!organizationId) throw new AuthFailure("FORBIDDEN", "You are not a member of any organization", actor);
  const org = await services.prisma.organization.findUnique({
    where: { id: organizationId },
    select: { id: true, name: true, status: true },
  });
  if (!org) throw new AuthFailure("FORBIDDEN", "Your organization no longer exists", actor);
  assertOrganizationUsable(org, user.isSuperAdmin);
  const permissions = await permissionsIn(services, org.id, user);
  if (!permissions) throw new AuthFailure("FORBIDDEN", "You are no longer a member of this organization", actor);
  return { org, permissions };
}

/** Resolves the caller from the request headers; throws AuthFailure. */
export async function authenticate(services: Services, headers: IncomingHttpHeaders): Promise<Principal> {
  const apiKey = headers["x-api-key"];
  if (typeof apiKey === "string" && apiKey.length > 0) return authenticateApiKey(services, apiKey.trim());
  const authorization = headers.authorization;
  if (typeof authorization === "string") {
    const match = /^Bearer\s+(\S+)$/i.exec(authorization.trim());
    if (!match) throw new AuthFailure("UNAUTHORIZED", "Authorization header must be 'Bearer <token>'");
    return authenticateBearer(services, match[1]);
  }
  const cookie = sessionCookieOf(headers);
  if (cookie) return authenticateSessionCookie(services, cookie);
  throw new AuthFailure("UNAUTHORIZED", "Authentication required: send X-API-Key or Authorization: Bearer <token>");
}

export function toTrpcError(failure: AuthFailure) {
  return failure.code === "FORBIDDEN" ? forbidden(failure.message) : unauthorized(failure.message);
}
