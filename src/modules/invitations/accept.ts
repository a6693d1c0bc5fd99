// The invitee's side, without credentials: read an invitation by its token and accept it.
//
// Accepting creates the account (name + password) or links an existing one. An existing
// account must prove it is theirs: its password, or a bearer token of that same user in the
// Authorization header (for accounts without a password, e.g. federated ones). Holding the
// token alone is not enough, since the e-mail may have been forwarded.
//
// Unknown and revoked tokens answer 404 (a resend kills the old token too); an accepted
// invitation answers 409 (no replay), an expired one 409 saying it expired.
import type { IncomingHttpHeaders } from "node:http";
import type { Services } from "../../services.js";
import type { RequestInfo } from "../../trpc/context.js";
import { hashPassword, sha256Hex, verifyPassword } from "../../lib/crypto.js";
import { consume, isBlocked, RateLimited } from "../../lib/rate-limit.js";
import { AuthFailure, authenticate, toTrpcError } from "../../trpc/auth.js";
import { writeAudit } from "../../trpc/audit.js";
import { conflict, forbidden, invalidField, notFound, unauthorized } from "../../trpc/errors.js";
import { TRPCError } from "@trpc/server";
import { password as newPassword, PASSWORD_MIN_LENGTH } from "../users/schemas.js";
import { invitationStatus } from "./schemas.js";

async function findOpenInvitation(services: Services, token: string) {
  const invitation = await services.prisma.invitation.findUnique({
    where: { tokenHash: sha256Hex(token) },
    include: { role: true, organization: { select: { id: true, name: true, status: true } } },
  });
  const status = invitation && invitationStatus(invitation);
  if (!invitation || status === "revoked") throw notFound("Invitation");
  if (status === "accepted") throw conflict("This invitation has already been accepted");
  if (status === "expired") throw conflict("This invitation has expired; ask for a new one");
  if (invitation.organization.status !== "active") throw conflict(`Organization "${invitation.organization.name}" is ${invitation.organization.status}`);
  return invitation;
}

export async function publicInvitation(services: Services, token: string) {
  const invitation = await findOpenInvitation(services, token);
  const user = await services.prisma.user.findUnique({ where: { email: invitation.email }, select: { id: true } });
  return {
    email: invitation.email,
    organization: { id: invitation.organization.id, name: invitation.organization.name },
    role: { id: invitation.role.id, name: invitation.role.name, description: invitation.role.description },
    expiresAt: invitation.expiresAt.toISOString(),
    userExists: !!user,
  };
}

/** The user id behind an Authorization: Bearer header, or null when there is none. */
async function bearerUserId(services: Services, headers: IncomingHttpHeaders): Promise<string | null> {
  if (!headers.authorization) return null;
  try {
    return (await authenticate(services, { authorization: headers.authorization })).userId;
  } catch (err) {
    throw err instanceof AuthFailure ? toTrpcError(err) : err;
  }
}

/** An existing account proves itself; wrong passwords spend the same budget as sign-in. */
async function proveExistingUser(
  services: Services,
  request: RequestInfo,
  headers: IncomingHttpHeaders,
  user: { id: string; email: string; passwordHash: string | null; status: string },
  password: string | undefined,
) {
  if (user.status !== "active") throw forbidden("This account is disabled");
  const viaBearer = await bearerUserId(services, headers);
  if (viaBearer !== null) {
    if (viaBearer !== user.id) throw forbidden("This invitation is for another e-mail address");
    return;
  }
  if (!password) throw invalidField("password", "Required: an account with this e-mail exists; send its password (or its bearer token)");
  const { loginByAccount } = services.rateLimits;
  const wait = await isBlocked(loginByAccount, user.email);
  if (wait !== null) throw new TRPCError({ code: "TOO_MANY_REQUESTS", message: `Too many failed attempts; retry after ${wait} s` });
  if (!(await verifyPassword(password, user.passwordHash))) {
    await consume(loginByAccount, user.email).catch((err) => {
      if (!(err instanceof RateLimited)) throw err;
    });
    await writeAudit(services.prisma, request, null, {
      action: "invitations.accept",
      outcome: "failure",
      entityType: "user",
      entityId: user.id,
      message: "wrong password for the existing account",
      actor: { type: "user", id: user.id, userId: user.id },
    });
    throw unauthorized("Wrong password for the existing account of this e-mail address");
  }
}

export async function acceptInvitation(
  services: Services,
  request: RequestInfo,
  headers: IncomingHttpHeaders,
  token: string,
  input: { name?: string; password?: string },
) {
  const invitation = await findOpenInvitation(services, token);
  const existing = await services.prisma.user.findUnique({ where: { email: invitation.email } });
  let passwordHash: string | null = null;
  if (existing) {
    await proveExistingUser(services, request, headers, existing, input.password);
  } else {
    if (!input.name?.trim()) throw invalidField("name", "Required to create your account");
    const password = newPassword.safeParse(input.password);
    if (!password.success) throw invalidField("password", input.password ? `Must be at least ${PASSWORD_MIN_LENGTH} characters` : "Required to create your account");
    passwordHash = await hashPassword(password.data);
  }

  return services.prisma.$transaction(async (tx) => {
    // One conditional update: of two concurrent accepts (or a replay) only one passes.
    const claimed = await tx.invitation.updateMany({
      where: { id: invitation.id, tokenHash: invitation.tokenHash, acceptedAt: null, revokedAt: null, expiresAt: { gt: new Date() } },
      data: { acceptedAt: new Date() },
    });
    if (claimed.count !== 1) throw conflict("This invitation has already been accepted");
    const user = existing ?? await tx.user.create({
      // The invitee proved the address by receiving the token.
      data: { email: invitation.email, name: input.name!.trim(), passwordHash, emailVerifiedAt: new Date() },
    });
    const member = await tx.membership.findUnique({ where: { organizationId_userId: { organizationId: invitation.organizationId, userId: user.id } } });
    if (member) throw conflict("You are already a member of this organization");
    await tx.membership.create({ data: { organizationId: invitation.organizationId, userId: user.id, roleId: invitation.roleId } });
    await tx.invitation.update({ where: { id: invitation.id }, data: { acceptedById: user.id } });
    await writeAudit(tx, request, null, {
      action: "invitations.accept",
      outcome: "success",
      organizationId: invitation.organizationId,
      entityType: "invitation",
      entityId: invitation.id,
      message: `${user.email} joined as ${invitation.role.name}${existing ? "" : " (new account)"}`,
      actor: { type: "user", id: user.id, userId: user.id },
    });
    return {
      organizationId: invitation.organizationId,
      organizationName: invitation.organization.name,
      userId: user.id,
      email: user.email,
      role: { id: invitation.role.id, name: invitation.role.name, system: invitation.role.system },
      userCreated: !existing,
    };
  });
}
