// Users are platform-level: one account, possibly a member of several organizations.
// A Super Admin sees every user; anyone else holding users:read sees only the members of the
// organization of the call, so every other user is a 404 to them (docs/identity.md).
import type { z } from "zod";
import type { DbTx } from "../../db/client.js";
import type { Prisma } from "../../generated/prisma/client.js";
import type { Services } from "../../services.js";
import type { Principal } from "../../trpc/principal.js";
import { conflict, notFound } from "../../trpc/errors.js";
import { hashPassword } from "../../lib/crypto.js";
import { pageOf } from "../../lib/paging.js";
import { containsText } from "../../lib/like.js";
import { userInclude, type createUserInput, type listUsersInput, type updateUserInput } from "./schemas.js";
import { issueEmailVerification, issuePasswordReset, voidOutstandingTokens } from "./tokens.js";

export function visibleUsers(principal: Principal): Prisma.UserWhereInput {
  return principal.isSuperAdmin ? {} : { memberships: { some: { organizationId: principal.organizationId } } };
}

export const normalizeEmail = (email: string) => email.trim().toLowerCase();

export interface UserFilter {
  search?: string;
  status?: string;
  organizationId?: string;
  superAdmin?: boolean;
}

export function userWhere(principal: Principal, f: UserFilter): Prisma.UserWhereInput {
  const and: Prisma.UserWhereInput[] = [visibleUsers(principal)];
  if (f.status) and.push({ status: f.status });
  if (f.superAdmin !== undefined) and.push({ isSuperAdmin: f.superAdmin });
  if (f.organizationId) and.push({ memberships: { some: { organizationId: f.organizationId } } });
  if (f.search) {
    and.push({ OR: [{ email: containsText(f.search) }, { name: containsText(f.search) }] });
  }
  return { AND: and };
}

export async function getUser(db: DbTx, principal: Principal, id: string) {
  const user = await db.user.findFirst({ where: { id, ...visibleUsers(principal) }, include: userInclude(principal) });
  if (!user) throw notFound("User");
  return user;
}

export async function listUsers(db: DbTx, principal: Principal, input: z.infer<typeof listUsersInput>) {
  const where = userWhere(principal, input);
  const [items, total] = await Promise.all([
    db.user.findMany({ where, include: userInclude(principal), orderBy: [{ createdAt: "desc" }, { id: "asc" }], take: input.limit, skip: input.offset }),
    db.user.count({ where }),
  ]);
  return pageOf(items, total, input.offset);
}

async function assertEmailFree(db: DbTx, email: string) {
  if (await db.user.findUnique({ where: { email }, select: { id: true } })) throw conflict("A user with this e-mail already exists");
}

/**
 * Super Admin. With a password the user can sign in at once and gets a verification mail;
 * without one they get a "choose your password" mail (its link also verifies the address).
 */
export async function createUser(db: DbTx, services: Services, principal: Principal, input: z.infer<typeof createUserInput>) {
  const email = normalizeEmail(input.email);
  await assertEmailFree(db, email);
  const passwordHash = input.password ? await hashPassword(input.password) : null;
  const user = await db.user.create({ data: { email, name: input.name, passwordHash } });
  if (passwordHash) await issueEmailVerification(db, services, user);
  else await issuePasswordReset(db, services, user, "welcome", principal.userId);
  return getUser(db, principal, user.id);
}

/** Super Admin. A new address is unverified until its owner confirms it; older links die. */
export async function updateUser(db: DbTx, services: Services, principal: Principal, input: z.infer<typeof updateUserInput>) {
  const user = await getUser(db, principal, input.id);
  const data: Prisma.UserUpdateInput = {};
  if (input.name !== undefined) data.name = input.name;
  const email = input.email !== undefined ? normalizeEmail(input.email) : undefined;
  const emailChanged = email !== undefined && email !== user.email;
  if (emailChanged) {
    await assertEmailFree(db, email);
    Object.assign(data, { email, emailVerifiedAt: null });
  }
  const updated = await db.user.update({ where: { id: user.id }, data });
  if (emailChanged) {
    await voidOutstandingTokens(db, [user.id]);
    await issueEmailVerification(db, services, updated);
  }
  return getUser(db, principal, user.id);
}

/** Super Admin: the link to the identity provider goes; the account and its password stay. */
export async function clearIdentityLink(db: DbTx, principal: Principal, id: string) {
  const user = await getUser(db, principal, id);
  if (!user.identityIssuer && !user.identitySubject) throw notFound("Identity link");
  await db.user.update({ where: { id: user.id }, data: { identityIssuer: null, identitySubject: null } });
  return getUser(db, principal, user.id);
}

export async function resendVerification(db: DbTx, services: Services, principal: Principal, id: string) {
  const user = await getUser(db, principal, id);
  if (user.emailVerifiedAt) throw conflict("E-mail address already verified");
  return issueEmailVerification(db, services, user);
}

export async function resetPassword(db: DbTx, services: Services, principal: Principal, id: string) {
  const user = await getUser(db, principal, id);
  if (user.status !== "active") throw conflict("User is disabled; enable the user first");
  return issuePasswordReset(db, services, user, "reset", principal.userId);
}
