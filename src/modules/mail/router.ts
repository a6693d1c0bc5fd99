// /api/v1/mail/outbox: the account mail the service has queued (invitations, password
// resets, welcome and verification mails) and how its delivery stands. Super Admins only:
// the outbox holds every tenant's mail. Bodies are never returned.
import { superAdminProcedure, router } from "../../trpc/procedures.js";
import { pageOf } from "../../lib/paging.js";
import { listOutboxInput, outboxPageOutput, toOutboxMailDto } from "./schemas.js";
import { listOutbox } from "./outbox.js";

export const mailRouter = router({
  outbox: superAdminProcedure
    .meta({
      openapi: {
        method: "GET", path: "/mail/outbox", tags: ["Mail"],
        summary: "The mail outbox: each message's delivery state, newest first (Super Admin)",
        description:
          "Messages are sent over SMTP_URL, retried with back-off up to MAIL_MAX_ATTEMPTS, then failed with the server's reason. " +
          "Without SMTP_URL (smtpConfigured false) they stay pending and `note` says where the link is instead. Bodies are never returned.",
      },
    })
    .input(listOutboxInput)
    .output(outboxPageOutput)
    .query(async ({ ctx, input }) => {
      const { items, total } = await listOutbox(ctx.db, input);
      return { ...pageOf(items.map((m) => toOutboxMailDto(m, ctx.services.config)), total, input.offset), smtpConfigured: Boolean(ctx.services.config.SMTP_URL) };
    }),
});
