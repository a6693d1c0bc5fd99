// The administrator's side of invitations: create, list, get, revoke, resend. Tokens are
// random, shown once and stored as SHA-256; every (re)send replaces the hash, so only the
// newest token works. The e-mail goes through the mailer with the mutation's transaction:
// it exists exactly when the invitation does.
import type { DbTx } from "../../db/client.js";
import type { Prisma } from "../../generated/prisma/client.js";
import type { Services } from "../../services.js";
import type { Principal } from "../../trpc/principal.js";
import { conflict, notFound } from "../../trpc/errors.js";
import { randomToken, sha256Hex } from "../../lib/crypto.js";
import { mailerFor } from "../../lib/mailer.js";
import { escapeLike } from "../../lib/like.js";
import { assertMayGrant } from "../roles/access.js";
import { PASSWORD_MIN_LENGTH } from "../users/schemas.js";
import { findAssignableRole } from "../roles/service.js";
import { lockOrganization } from "../members/organization-scope.js";
import { DEFAULT_INVITATION_DAYS, invitationStatus, type InvitationStatus } from "./schemas.js";

export const INVITATION_TOKEN_PREFIX = "fmi_";

const withRole = { role: true } as const;

function statusWhere(status: InvitationStatus, now: Date): Prisma.InvitationWhereInput {
  switch (status) {
    case "revoked":
      return { revokedAt: { not: null } };
    case "accepted":
      return { revokedAt: null, acceptedAt: { not: null } };
    case "expired":
      return { revokedAt: null, acceptedAt: null, expiresAt: { lte: now } };
    case "pending":
      return { revokedAt: null, acceptedAt: null, expiresAt: { gt: now } };
  }
}

function newToken(days: number) {
  const token = randomToken(INVITATION_TOKEN_PREFIX, 40);
  return { token, tokenHash: sha256Hex(token), expiresAt: new Date(Date.now() + days * 86_400_000) };
}

async function sendInvitationMail(
  services: Services,
  db: DbTx,
  invitation: { id: string; email: string; organizationId: string; expiresAt: Date; role: { name: string } },
  token: string,
) {
  const org = await db.organization.findUniqueOrThrow({ where: { id: invitation.organizationId }, select: { name: true } });
  await mailerFor(services).send(db, {
    to: invitation.email,
    subject: `You are invited to join ${org.name}`,
    template: "invitation",
    invitationId: invitation.id,
    text: [
      `You have been invited to join the organization "${org.name}" as ${invitation.role.name}.`,
      "",
      // The console's public page: set a name and a password there and land signed in.
      services.config.PUBLIC_URL
        ? `Open it in the console: ${services.config.PUBLIC_URL}/invitations/${token}`
        : `Open it in the console: /invitations/${token} at the service's address`,
      "",
      "Or through the API:",
      `See the invitation:  GET  /api/v1/public/invitations/${token}`,
      `Accept it:           POST /api/v1/public/invitations/${token}/accept  { "name": "...", "password": "..." }`,
      `If you already have an account, send its password (a new account needs a name and a password of at least ${PASSWORD_MIN_LENGTH} characters).`,
      "",
      `The invitation expires at ${invitation.expiresAt.toISOString()}.`,
    ].join("\n"),
  });
}

export async function createInvitation(
  services: Services,
  db: DbTx,
  principal: Principal,
  input: { email: string; roleId: string; expiresInDays?: number },
) {
  const organizationId = principal.organizationId;
  const email = input.email.trim().toLowerCase();
  const role = await findAssignableRole(db, organizationId, input.roleId);
  assertMayGrant(principal, role.permissions, "invite with a role granting");
  // One pending invitation per address: serialize the check with other membership changes.
  await lockOrganization(db, organizationId);
  const member = await db.membership.findFirst({ where: { organizationId, user: { email } }, select: { userId: true } });
  if (member) throw conflict(`${email} is already a member of this organization`);
  const pending = await db.invitation.findFirst({ where: { organizationId, email, ...statusWhere("pending", new Date()) }, select: { id: true } });
  if (pending) throw conflict(`A pending invitation for ${email} already exists (${pending.id}); resend it instead`);

  const { token, tokenHash, expiresAt } = newToken(input.expiresInDays ?? DEFAULT_INVITATION_DAYS);
  const invitation = await db.invitation.create({
    data: { organizationId, email, roleId: role.id, tokenHash, expiresAt, invitedById: principal.userId },
    include: withRole,
  });
  await sendInvitationMail(services, db, invitation, token);
  return { invitation, token };
}

export async function listInvitations(
  db: DbTx,
  organizationId: string,
  query: { limit: number; offset: number; status?: InvitationStatus; search?: string },
) {
  const search = query.search?.trim();
  const where: Prisma.InvitationWhereInput = {
    organizationId,
    ...(query.status ? statusWhere(query.status, new Date()) : {}),
    ...(search ? { email: { contains: escapeLike(search.toLowerCase()) } } : {}),
  };
  const [items, total] = await Promise.all([
    db.invitation.findMany({ where, include: withRole, orderBy: [{ createdAt: "desc" }, { id: "asc" }], take: query.limit, skip: query.offset }),
    db.invitation.count({ where }),
  ]);
  return { items, total };
}

export async function getInvitation(db: DbTx, organizationId: string, id: string) {
  const invitation = await db.invitation.findFirst({ where: { id, organizationId }, include: withRole });
  if (!invitation) throw notFound("Invitation");
  return invitation;
}

function assertOpen(invitation: Parameters<typeof invitationStatus>[0], action: string) {
  const status = invitationStatus(invitation);
  if (status === "accepted" || status === "revoked") throw conflict(`Invitation is already ${status}; it cannot be ${action}`);
}

export async function revokeInvitation(db: DbTx, organizationId: string, id: string) {
  const invitation = await getInvitation(db, organizationId, id);
  assertOpen(invitation, "revoked");
  return db.invitation.update({ where: { id: invitation.id }, data: { revokedAt: new Date() }, include: withRole });
}

/** A new token and a new expiry (also for an expired invitation); the previous token dies. */
export async function resendInvitation(services: Services, db: DbTx, principal: Principal, id: string, input: { expiresInDays?: number }) {
  const current = await getInvitation(db, principal.organizationId, id);
  assertOpen(current, "resent");
  // The role may have gained permissions since: the resender must still be allowed to offer it.
  assertMayGrant(principal, current.role.permissions, "invite with a role granting");
  const { token, tokenHash, expiresAt } = newToken(input.expiresInDays ?? DEFAULT_INVITATION_DAYS);
  const invitation = await db.invitation.update({
    where: { id: current.id },
    data: { tokenHash, expiresAt, lastSentAt: new Date(), sendCount: { increment: 1 } },
    include: withRole,
  });
  await sendInvitationMail(services, db, invitation, token);
  return { invitation, token };
}
