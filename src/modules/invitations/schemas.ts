// Invitations as the API shows them. The token appears only in the create and resend
// responses (and in the e-mail); the public view shows what the invitee needs to decide.
import { z } from "zod";
import type { Invitation, Role } from "../../generated/prisma/client.js";
import { roleRefOutput } from "../roles/schemas.js";
import { mailDeliveryOutput, toMailDeliveryDto, type OutboxRow } from "../mail/schemas.js";
import type { Config } from "../../config.js";

export const INVITATION_STATUSES = ["pending", "accepted", "revoked", "expired"] as const;
export type InvitationStatus = (typeof INVITATION_STATUSES)[number];

export const DEFAULT_INVITATION_DAYS = 7;
export const MAX_INVITATION_DAYS = 30;

export const expiresInDays = z
  .number()
  .int()
  .min(1)
  .max(MAX_INVITATION_DAYS)
  .describe(`days until the invitation expires (default ${DEFAULT_INVITATION_DAYS})`);

export const invitationToken = z.string().min(10).max(200);

export const invitationOutput = z.object({
  id: z.string().uuid(),
  organizationId: z.string().uuid(),
  email: z.string(),
  roleId: z.string().uuid(),
  role: roleRefOutput,
  status: z.enum(INVITATION_STATUSES),
  expiresAt: z.string().datetime(),
  invitedBy: z.string().uuid().nullable(),
  acceptedAt: z.string().datetime().nullable(),
  acceptedBy: z.string().uuid().nullable(),
  revokedAt: z.string().datetime().nullable(),
  lastSentAt: z.string().datetime(),
  sendCount: z.number().int(),
  createdAt: z.string().datetime(),
  updatedAt: z.string().datetime(),
  /** the delivery state of the mail of the last send or resend (null: none recorded) */
  mail: mailDeliveryOutput.nullable(),
});
export type InvitationDto = z.infer<typeof invitationOutput>;

export const invitationWithTokenOutput = invitationOutput.extend({
  token: z.string().describe("the invitation token: returned once (also sent by e-mail), stored only as a hash"),
});

export const publicInvitationOutput = z.object({
  email: z.string(),
  organization: z.object({ id: z.string().uuid(), name: z.string() }),
  role: z.object({ id: z.string().uuid(), name: z.string(), description: z.string() }),
  expiresAt: z.string().datetime(),
  /** true: accepting needs the existing account's password (or its bearer token) */
  userExists: z.boolean(),
});

export const acceptOutput = z.object({
  organizationId: z.string().uuid(),
  organizationName: z.string(),
  userId: z.string().uuid(),
  email: z.string(),
  role: roleRefOutput,
  /** true when the account was created by this acceptance */
  userCreated: z.boolean(),
});

export function invitationStatus(inv: Pick<Invitation, "acceptedAt" | "revokedAt" | "expiresAt">, now = new Date()): InvitationStatus {
  if (inv.revokedAt) return "revoked";
  if (inv.acceptedAt) return "accepted";
  return inv.expiresAt <= now ? "expired" : "pending";
}

export function toInvitationDto(
  inv: Invitation & { role: Role },
  mail: OutboxRow | undefined,
  config: Pick<Config, "SMTP_URL" | "MAIL_MAX_ATTEMPTS">,
): InvitationDto {
  return {
    id: inv.id,
    organizationId: inv.organizationId,
    email: inv.email,
    roleId: inv.roleId,
    role: { id: inv.role.id, name: inv.role.name, system: inv.role.system },
    status: invitationStatus(inv),
    expiresAt: inv.expiresAt.toISOString(),
    invitedBy: inv.invitedById,
    acceptedAt: inv.acceptedAt?.toISOString() ?? null,
    acceptedBy: inv.acceptedById,
    revokedAt: inv.revokedAt?.toISOString() ?? null,
    lastSentAt: inv.lastSentAt.toISOString(),
    sendCount: inv.sendCount,
    createdAt: inv.createdAt.toISOString(),
    updatedAt: inv.updatedAt.toISOString(),
    mail: mail ? toMailDeliveryDto(mail, config) : null,
  };
}
