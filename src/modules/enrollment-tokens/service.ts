// Enrollment token rules: create (secret shown once, stored as SHA-256), list, revoke, and
// the atomic consumption used by enrollment.
import type { DbTx } from "../../db/client.js";
import type { EnrollmentToken, Prisma } from "../../generated/prisma/client.js";
import { randomToken, sha256Hex } from "../../lib/crypto.js";
import { conflict, notFound } from "../../trpc/errors.js";
import type { Principal } from "../../trpc/principal.js";
import { UTC_NOW } from "../devices/sql.js";
import { ENROLLMENT_TOKEN_PREFIX, statusOfToken, type EnrollmentTokenMode, type EnrollmentTokenStatus } from "./schemas.js";
import type { Labels } from "../devices/labels.js";

export async function createEnrollmentToken(
  db: DbTx,
  principal: Principal,
  input: { name: string; description?: string; labels: Labels; mode: EnrollmentTokenMode; expiresAt?: string; maxUses?: number },
) {
  const token = randomToken(ENROLLMENT_TOKEN_PREFIX, 40);
  const row = await db.enrollmentToken.create({
    data: {
      organizationId: principal.organizationId,
      name: input.name,
      description: input.description ?? null,
      tokenPrefix: token.slice(0, 8),
      tokenHash: sha256Hex(token),
      labels: input.labels,
      mode: input.mode,
      expiresAt: input.expiresAt ? new Date(input.expiresAt) : null,
      maxUses: input.maxUses ?? null,
      createdById: principal.userId,
    },
  });
  return { row, token };
}

export async function listEnrollmentTokens(db: DbTx, organizationId: string, query: { status?: EnrollmentTokenStatus; limit: number; offset: number }) {
  const now = new Date();
  // The status is derived; the usage comparison (useCount >= maxUses) needs a column reference.
  const exhausted: Prisma.EnrollmentTokenWhereInput = { maxUses: { not: null, lte: db.enrollmentToken.fields.useCount } };
  const unexpired: Prisma.EnrollmentTokenWhereInput = { OR: [{ expiresAt: null }, { expiresAt: { gt: now } }] };
  const byStatus: Record<EnrollmentTokenStatus, Prisma.EnrollmentTokenWhereInput> = {
    active: { revokedAt: null, AND: [unexpired, { NOT: exhausted }] },
    expired: { revokedAt: null, expiresAt: { lte: now } },
    exhausted: { revokedAt: null, AND: [unexpired, exhausted] },
    revoked: { revokedAt: { not: null } },
  };
  const where: Prisma.EnrollmentTokenWhereInput = { organizationId, ...(query.status ? byStatus[query.status] : {}) };
  const [rows, total] = await Promise.all([
    db.enrollmentToken.findMany({ where, orderBy: [{ createdAt: "desc" }, { id: "desc" }], take: query.limit, skip: query.offset }),
    db.enrollmentToken.count({ where }),
  ]);
  return { rows, total };
}

export async function revokeEnrollmentToken(db: DbTx, organizationId: string, id: string) {
  const current = await db.enrollmentToken.findFirst({ where: { id, organizationId } });
  if (!current) throw notFound("Enrollment token");
  if (current.revokedAt) throw conflict(`Enrollment token was already revoked on ${current.revokedAt.toISOString()}`);
  return db.enrollmentToken.update({ where: { id }, data: { revokedAt: new Date() } });
}

export type ConsumeResult =
  | { ok: true; token: EnrollmentToken }
  | { ok: false; reason: "invalid" | Exclude<EnrollmentTokenStatus, "active">; token?: { id: string; name: string; organizationId: string } };

/**
 * Takes one use of a token, atomically: the conditions (not revoked, not expired, uses left)
 * and the increment are one UPDATE, so concurrent enrollments can never exceed maxUses. Run
 * it inside the enrollment transaction: a later refusal (claim conflict, no CA) rolls the
 * use back.
 */
export async function consumeEnrollmentToken(db: DbTx, secret: string): Promise<ConsumeResult> {
  const hash = sha256Hex(secret);
  const rows = await db.$queryRaw<{ id: string }[]>`
    UPDATE "EnrollmentToken"
       SET "useCount" = "useCount" + 1, "lastUsedAt" = ${UTC_NOW}, "updatedAt" = ${UTC_NOW}
     WHERE "tokenHash" = ${hash}
       AND "revokedAt" IS NULL
       AND ("expiresAt" IS NULL OR "expiresAt" > ${UTC_NOW})
       AND ("maxUses" IS NULL OR "useCount" < "maxUses")
    RETURNING "id"`;
  if (rows[0]) return { ok: true, token: await db.enrollmentToken.findUniqueOrThrow({ where: { id: rows[0].id } }) };
  // Refused: say why, for the operator reading the agent's log (the caller proved it knows the secret).
  const existing = await db.enrollmentToken.findUnique({ where: { tokenHash: hash } });
  if (!existing) return { ok: false, reason: "invalid" };
  const status = statusOfToken(existing);
  const token = { id: existing.id, name: existing.name, organizationId: existing.organizationId };
  return { ok: false, reason: status === "active" ? "exhausted" : status, token };
}
