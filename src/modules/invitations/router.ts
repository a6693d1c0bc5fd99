// /invitations (the caller's organization) and /public/invitations/{token} (no credentials:
// the token is the credential). Both live here: one resource, one folder.
import { z } from "zod";
import { protectedProcedure, publicProcedure, router, type AuthedContext } from "../../trpc/procedures.js";
import { pageOf, pageOutput, pagingInput } from "../../lib/paging.js";
import {
  acceptOutput, expiresInDays, INVITATION_STATUSES, invitationOutput, invitationToken, invitationWithTokenOutput,
  publicInvitationOutput, toInvitationDto,
} from "./schemas.js";
import { createInvitation, getInvitation, listInvitations, resendInvitation, revokeInvitation } from "./service.js";
import { acceptInvitation, publicInvitation } from "./accept.js";
import { latestInvitationMails } from "../mail/outbox.js";
import type { Invitation, Role } from "../../generated/prisma/client.js";

const TAG = "Invitations";
const byId = z.object({ id: z.string().uuid() });

/** The invitations as the API shows them, each with the delivery state of its latest mail (one query). */
async function withMail(ctx: AuthedContext, invitations: Array<Invitation & { role: Role }>) {
  const mails = await latestInvitationMails(ctx.db, invitations.map((i) => i.id));
  return invitations.map((i) => toInvitationDto(i, mails.get(i.id), ctx.services.config));
}
const oneWithMail = async (ctx: AuthedContext, invitation: Invitation & { role: Role }) => (await withMail(ctx, [invitation]))[0]!;

export const invitationsRouter = router({
  list: protectedProcedure("invitations:read")
    .meta({ openapi: { method: "GET", path: "/invitations", tags: [TAG], summary: "List the organization's invitations" } })
    .input(z.object({
      ...pagingInput,
      status: z.enum(INVITATION_STATUSES).optional(),
      search: z.string().max(320).optional().describe("part of the e-mail address"),
    }))
    .output(pageOutput(invitationOutput).extend({
      smtpConfigured: z.boolean().describe("false: the service has no SMTP server (SMTP_URL); invitation mails are not sent, hand the link over yourself"),
    }))
    .query(async ({ ctx, input }) => {
      const { items, total } = await listInvitations(ctx.db, ctx.principal.organizationId, input);
      return { ...pageOf(await withMail(ctx, items), total, input.offset), smtpConfigured: Boolean(ctx.services.config.SMTP_URL) };
    }),

  create: protectedProcedure("invitations:write")
    .meta({
      openapi: { method: "POST", path: "/invitations", tags: [TAG], summary: "Invite someone by e-mail with a role; the token is in this response only (and in the e-mail)" },
      successStatus: 201,
      audit: { entity: "invitation" },
    })
    .input(z.object({ email: z.string().trim().email().max(320), roleId: z.string().uuid(), expiresInDays: expiresInDays.optional() }))
    .output(invitationWithTokenOutput)
    .mutation(async ({ ctx, input }) => {
      const { invitation, token } = await createInvitation(ctx.services, ctx.db, ctx.principal, input);
      return { ...(await oneWithMail(ctx, invitation)), token };
    }),

  get: protectedProcedure("invitations:read")
    .meta({ openapi: { method: "GET", path: "/invitations/{id}", tags: [TAG], summary: "Get an invitation" } })
    .input(byId)
    .output(invitationOutput)
    .query(async ({ ctx, input }) => oneWithMail(ctx, await getInvitation(ctx.db, ctx.principal.organizationId, input.id))),

  revoke: protectedProcedure("invitations:write")
    .meta({
      openapi: { method: "DELETE", path: "/invitations/{id}", tags: [TAG], summary: "Revoke an invitation (its token stops working)" },
      audit: { entity: "invitation", action: "invitations.revoke" },
    })
    .input(byId)
    .output(invitationOutput)
    .mutation(async ({ ctx, input }) => oneWithMail(ctx, await revokeInvitation(ctx.db, ctx.principal.organizationId, input.id))),

  resend: protectedProcedure("invitations:write")
    .meta({
      openapi: { method: "POST", path: "/invitations/{id}/resend", tags: [TAG], summary: "Send the invitation again with a new token and expiry (the old token stops working)" },
      audit: { entity: "invitation", action: "invitations.resend" },
    })
    .input(byId.extend({ expiresInDays: expiresInDays.optional() }))
    .output(invitationWithTokenOutput)
    .mutation(async ({ ctx, input: { id, ...rest } }) => {
      const { invitation, token } = await resendInvitation(ctx.services, ctx.db, ctx.principal, id, rest);
      return { ...(await oneWithMail(ctx, invitation)), token };
    }),

  publicGet: publicProcedure
    .meta({ openapi: { method: "GET", path: "/public/invitations/{token}", tags: [TAG], protect: false, summary: "Invitation details by token (no credentials)" } })
    .input(z.object({ token: invitationToken }))
    .output(publicInvitationOutput)
    .query(({ ctx, input }) => publicInvitation(ctx.services, input.token)),

  publicAccept: publicProcedure
    .meta({
      openapi: {
        method: "POST", path: "/public/invitations/{token}/accept", tags: [TAG], protect: false,
        summary: "Accept an invitation: creates the account (name, password) or links the existing one (its password or bearer token)",
      },
      audit: false,
    })
    .input(z.object({
      token: invitationToken,
      name: z.string().trim().min(1).max(100).optional().describe("required when no account exists for the invited e-mail"),
      password: z.string().min(1).max(1024).optional().describe("the new account's password (at least 12 characters), or the existing account's"),
    }))
    .output(acceptOutput)
    .mutation(({ ctx, input: { token, ...body } }) => acceptInvitation(ctx.services, ctx.request, ctx.headers, token, body)),
});
