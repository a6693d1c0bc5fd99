// One-time tokens that travel by e-mail: password resets (also the "choose your password"
// link of a user created without one) and address verification. Like API keys they are
// random, shown once (in the mail only) and stored as SHA-256; each works once, before its
// expiry, and a newer token of the same kind supersedes the older ones.
import type { DbTx } from "../../db/client.js";
import type { Services } from "../../services.js";
import type { RequestInfo } from "../../trpc/context.js";
import { hashPassword, randomToken, sha256Hex } from "../../lib/crypto.js";
import { mailerFor, type MailMessage } from "../../lib/mailer.js";
import { mailStateOf } from "../mail/outbox.js";
import { writeAudit } from "../../trpc/audit.js";
import { badRequest } from "../../trpc/errors.js";

const RESET_PREFIX = "fmp_";
const VERIFY_PREFIX = "fmv_";
const HOUR = 3_600_000;
const TTL = { reset: 1 * HOUR, welcome: 72 * HOUR, verification: 24 * HOUR };

export type ResetPurpose = "reset" | "welcome";

interface Recipient {
  id: string;
  email: string;
  name: string;
}

function resetMail(user: Recipient, token: string, purpose: ResetPurpose, expiresAt: Date): MailMessage {
  const intro = purpose === "welcome"
    ? `An account was created for you on Fleet Manager. Choose your password to start.`
    : `Someone asked to reset the password of your Fleet Manager account. If it was not you, ignore this mail.`;
  return {
    to: user.email,
    template: purpose === "welcome" ? "welcome" : "password-reset",
    subject: purpose === "welcome" ? "Your Fleet Manager account" : "Reset your Fleet Manager password",
    text: [
      `Hello ${user.name},`, "", intro, "",
      `Your one-time code: ${token}`,
      `Send it with your new password to POST /api/v1/users/password-reset/complete { "token", "password" }.`,
      `It works once and expires at ${expiresAt.toISOString()}.`,
    ].join("\n"),
  };
}

function verificationMail(user: Recipient, token: string, expiresAt: Date): MailMessage {
  return {
    to: user.email,
    template: "email-verification",
    subject: "Confirm your e-mail address",
    text: [
      `Hello ${user.name},`, "",
      `Please confirm that ${user.email} is your address.`,
      `Your one-time code: ${token}`,
      `Send it to POST /api/v1/users/email-verification/complete { "token" }. It expires at ${expiresAt.toISOString()}.`,
    ].join("\n"),
  };
}

/** Issues a reset token (superseding older ones) and mails it; returns when it expires. */
export async function issuePasswordReset(db: DbTx, services: Services, user: Recipient, purpose: ResetPurpose, requestedById: string | null) {
  const now = new Date();
  await db.passwordResetToken.updateMany({ where: { userId: user.id, usedAt: null }, data: { usedAt: now } });
  const token = randomToken(RESET_PREFIX, 40);
  const expiresAt = new Date(now.getTime() + TTL[purpose]);
  await db.passwordResetToken.create({ data: { userId: user.id, tokenHash: sha256Hex(token), purpose, expiresAt, requestedById } });
  const mail = await mailerFor(services).send(db, resetMail(user, token, purpose, expiresAt));
  return { userId: user.id, sent: true as const, expiresAt: expiresAt.toISOString(), mail: await mailStateOf(db, services.config, mail.id) };
}

export async function issueEmailVerification(db: DbTx, services: Services, user: Recipient) {
  const now = new Date();
  await db.emailVerificationToken.updateMany({ where: { userId: user.id, usedAt: null }, data: { usedAt: now } });
  const token = randomToken(VERIFY_PREFIX, 40);
  const expiresAt = new Date(now.getTime() + TTL.verification);
  await db.emailVerificationToken.create({ data: { userId: user.id, tokenHash: sha256Hex(token), email: user.email, expiresAt } });
  const mail = await mailerFor(services).send(db, verificationMail(user, token, expiresAt));
  return { userId: user.id, sent: true as const, expiresAt: expiresAt.toISOString(), mail: await mailStateOf(db, services.config, mail.id) };
}

/** Voids every outstanding token of the users (address changed, user deleted or disabled). */
export async function voidOutstandingTokens(db: DbTx, userIds: string[]) {
  const now = new Date();
  await db.passwordResetToken.updateMany({ where: { userId: { in: userIds }, usedAt: null }, data: { usedAt: now } });
  await db.emailVerificationToken.updateMany({ where: { userId: { in: userIds }, usedAt: null }, data: { usedAt: now } });
}

// One message for every way a token can be wrong: which one is not revealed.
const INVALID_TOKEN = "The code is invalid, expired or already used";

/**
 * Redeems a reset token: sets the password, ends every session and older token (the
 * credentials changed), and counts the address as verified (the mail reached it).
 */
export async function completePasswordReset(services: Services, request: RequestInfo, token: string, password: string) {
  const passwordHash = await hashPassword(password); // before the transaction: scrypt is slow by design
  return services.prisma.$transaction(async (tx) => {
    const now = new Date();
    const record = await tx.passwordResetToken.findUnique({ where: { tokenHash: sha256Hex(token) }, include: { user: true } });
    if (!record || record.usedAt || record.expiresAt <= now || record.user.status !== "active") throw badRequest(INVALID_TOKEN);
    // Conditional on still being unused: of two concurrent redemptions exactly one wins.
    const claimed = await tx.passwordResetToken.updateMany({ where: { id: record.id, usedAt: null }, data: { usedAt: now } });
    if (claimed.count !== 1) throw badRequest(INVALID_TOKEN);
    await tx.user.update({
      where: { id: record.userId },
      data: {
        passwordHash,
        credentialsVersion: { increment: 1 },
        ...(record.user.emailVerifiedAt ? {} : { emailVerifiedAt: now }),
      },
    });
    await tx.session.updateMany({ where: { userId: record.userId, revokedAt: null }, data: { revokedAt: now } });
    await tx.passwordResetToken.updateMany({ where: { userId: record.userId, usedAt: null }, data: { usedAt: now } });
    await writeAudit(tx, request, null, {
      action: "users.password-reset.complete",
      outcome: "success",
      entityType: "user",
      entityId: record.userId,
      actor: { type: "user", id: record.userId, userId: record.userId },
    });
    return { userId: record.userId, passwordChanged: true as const };
  });
}

export async function completeEmailVerification(services: Services, request: RequestInfo, token: string) {
  return services.prisma.$transaction(async (tx) => {
    const now = new Date();
    const record = await tx.emailVerificationToken.findUnique({ where: { tokenHash: sha256Hex(token) }, include: { user: true } });
    // A token for an address the user no longer has proves nothing about the current one.
    if (!record || record.usedAt || record.expiresAt <= now || record.email !== record.user.email) throw badRequest(INVALID_TOKEN);
    const claimed = await tx.emailVerificationToken.updateMany({ where: { id: record.id, usedAt: null }, data: { usedAt: now } });
    if (claimed.count !== 1) throw badRequest(INVALID_TOKEN);
    await tx.user.update({ where: { id: record.userId }, data: { emailVerifiedAt: record.user.emailVerifiedAt ?? now } });
    await writeAudit(tx, request, null, {
      action: "users.email-verification.complete",
      outcome: "success",
      entityType: "user",
      entityId: record.userId,
      actor: { type: "user", id: record.userId, userId: record.userId },
    });
    return { userId: record.userId, emailVerified: true as const };
  });
}
