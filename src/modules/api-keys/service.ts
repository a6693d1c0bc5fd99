// API key rules. The key is random (`fm_` + 40 base62), shown once and stored as SHA-256;
// authentication (src/trpc/auth.ts) bounds a key by its creator's current role, and this
// file makes sure a key is never even asked to hold more than its creator may do.
import type { DbTx } from "../../db/client.js";
import type { Principal } from "../../trpc/principal.js";
import type { AuditNote } from "../../trpc/audit.js";
import { badRequest, conflict, notFound } from "../../trpc/errors.js";
import { API_KEY_PREFIX } from "../../trpc/auth.js";
import { randomToken, sha256Hex } from "../../lib/crypto.js";
import { addedPermissions, assertMayGrant } from "../roles/access.js";
import { uniquePermissions } from "../roles/schemas.js";
import { isPlatformKey } from "./schemas.js";

export const KEY_PREFIX_LENGTH = 8;

/**
 * Platform keys are marked in the audit entry of every change that makes, keeps or ends one,
 * so that the log answers "who holds Super Admin power by key" without reading permissions.
 */
function notePlatformKey(audit: AuditNote | null | undefined, before: readonly string[] | null, after: readonly string[]) {
  if (!audit) return;
  const was = before !== null && isPlatformKey(before);
  if (isPlatformKey(after)) audit.message = `${before === null || was ? "" : "now a "}platform key (names platform:admin)`;
  else if (was) audit.message = "no longer a platform key (platform:admin removed)";
}

/** Revoked keys are gone for the API (404); their rows stay for the audit trail. */
const live = (organizationId: string) => ({ organizationId, revokedAt: null });

export async function createApiKey(
  db: DbTx,
  principal: Principal,
  organizationId: string,
  input: { name: string; description?: string; permissions: string[]; expiresAt?: string },
  audit?: AuditNote | null,
) {
  const permissions = uniquePermissions(input.permissions);
  assertMayGrant(principal, permissions, "give a key");
  notePlatformKey(audit, null, permissions);
  const key = randomToken(API_KEY_PREFIX, 40);
  const row = await db.apiKey.create({
    data: {
      organizationId,
      name: input.name,
      description: input.description ?? null,
      keyPrefix: key.slice(0, KEY_PREFIX_LENGTH),
      keyHash: sha256Hex(key),
      permissions,
      expiresAt: input.expiresAt ? new Date(input.expiresAt) : null,
      // The human behind the call (for a key, its creator): the new key is bounded by them.
      createdById: principal.userId,
    },
  });
  return { row, key };
}

export async function listApiKeys(db: DbTx, organizationId: string, page: { limit: number; offset: number }) {
  const where = live(organizationId);
  const [items, total] = await Promise.all([
    db.apiKey.findMany({ where, orderBy: [{ createdAt: "desc" }, { id: "asc" }], take: page.limit, skip: page.offset }),
    db.apiKey.count({ where }),
  ]);
  return { items, total };
}

/** The keys `rows` replaced in rotations, by the replacing key's id, in one query (the list shows them). */
export async function replacedKeysOf(db: DbTx, organizationId: string, rows: readonly { id: string }[]) {
  const ids = rows.map((r) => r.id);
  const old = ids.length ? await db.apiKey.findMany({ where: { organizationId, replacedById: { in: ids } } }) : [];
  return new Map(old.map((k) => [k.replacedById!, k]));
}

/** The creators of `rows`, by id, in one query (the list names them). */
export async function creatorsOf(db: DbTx, rows: readonly { createdById: string | null }[]) {
  const ids = [...new Set(rows.flatMap((r) => (r.createdById ? [r.createdById] : [])))];
  const users = ids.length ? await db.user.findMany({ where: { id: { in: ids } }, select: { id: true, name: true, email: true } }) : [];
  return new Map(users.map((u) => [u.id, u]));
}

export async function getApiKey(db: DbTx, organizationId: string, id: string) {
  const row = await db.apiKey.findFirst({ where: { id, ...live(organizationId) } });
  if (!row) throw notFound("API key");
  return row;
}

export async function updateApiKey(
  db: DbTx,
  principal: Principal,
  organizationId: string,
  id: string,
  input: { name?: string; description?: string | null; permissions?: string[]; expiresAt?: string | null },
  audit?: AuditNote | null,
) {
  const current = await getApiKey(db, organizationId, id);
  const permissions = input.permissions && uniquePermissions(input.permissions);
  if (permissions) assertMayGrant(principal, addedPermissions(current.permissions, permissions), "give a key");
  notePlatformKey(audit, current.permissions, permissions ?? current.permissions);
  return db.apiKey.update({
    where: { id: current.id },
    data: {
      name: input.name,
      description: input.description,
      permissions,
      expiresAt: input.expiresAt === undefined ? undefined : input.expiresAt && new Date(input.expiresAt),
    },
  });
}

/** The key answers 401 from the next request on. */
export async function revokeApiKey(db: DbTx, organizationId: string, id: string, audit?: AuditNote | null) {
  const current = await getApiKey(db, organizationId, id);
  notePlatformKey(audit, current.permissions, current.permissions);
  const row = await db.apiKey.update({ where: { id: current.id }, data: { revokedAt: new Date() } });
  return { id: row.id, revoked: true as const, revokedAt: row.revokedAt!.toISOString() };
}

/**
 * Replaces a key in one transaction (the mutation's): a new key with the old one's name,
 * description and permissions, bounded by the caller like a new key, and the old key revoked
 * at once (graceSeconds 0) or left working until now + graceSeconds (never later than its own
 * expiry), so that what uses it can be handed the new key without an outage.
 */
export async function rotateApiKey(
  db: DbTx,
  principal: Principal,
  organizationId: string,
  id: string,
  input: { graceSeconds: number; expiresAt?: string | null },
  audit?: AuditNote | null,
) {
  const current = await getApiKey(db, organizationId, id);
  if (current.replacedById) throw conflict(`This key was already rotated: key ${current.replacedById} replaces it; rotate that one`);
  const now = new Date();
  const expiresAt = input.expiresAt === undefined ? current.expiresAt : input.expiresAt === null ? null : new Date(input.expiresAt);
  if (expiresAt && expiresAt <= now) {
    throw badRequest(`Invalid input: expiresAt: the key expired at ${expiresAt.toISOString()}; give the new key an expiresAt in the future, or null for none`);
  }
  const { row, key } = await createApiKey(db, principal, organizationId, {
    name: current.name,
    description: current.description ?? undefined,
    permissions: current.permissions,
    ...(expiresAt ? { expiresAt: expiresAt.toISOString() } : {}),
  }, audit);
  const graceEnd = new Date(now.getTime() + input.graceSeconds * 1000);
  const end = input.graceSeconds === 0
    ? { revokedAt: now }
    : { expiresAt: current.expiresAt && current.expiresAt < graceEnd ? current.expiresAt : graceEnd };
  // Marked replaced (the list says so during the handover) and linked to its successor, which
  // shows the old key's use after it ends.
  const replaced = await db.apiKey.update({ where: { id: current.id }, data: { ...end, replacedById: row.id, replacedAt: now } });
  if (audit) audit.message = [`replaces ${current.keyPrefix}…`, input.graceSeconds === 0 ? "revoked at once" : `working until ${replaced.expiresAt!.toISOString()}`, audit.message].filter(Boolean).join("; ");
  return {
    row,
    key,
    replaced: {
      id: replaced.id,
      keyPrefix: replaced.keyPrefix,
      ...(replaced.revokedAt ? { revokedAt: replaced.revokedAt.toISOString() } : { expiresAt: replaced.expiresAt!.toISOString() }),
    },
  };
}
