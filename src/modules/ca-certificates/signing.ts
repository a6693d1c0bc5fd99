// What every PKI operation shares: turning library refusals into HTTP errors, opening sealed CA
// private keys, the signing identity of a CA, the per-organization lock, and "can this CA sign
// right now?".
import { createHash, X509Certificate } from "node:crypto";
import type { DbTx } from "../../db/client.js";
import type { CaCertificate } from "../../generated/prisma/client.js";
import type { SecretBox } from "../../lib/crypto.js";
import { PkiInputError } from "../../lib/pki/index.js";
import type { TRPCError } from "@trpc/server";
import { badRequest, conflict } from "../../trpc/errors.js";

/** Runs a PKI library call; its refusals (PkiInputError) become `toError(context: message)`. */
export async function pkiRefusalAs<T>(toError: (message: string) => TRPCError, context: string | null, run: () => T | Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    if (err instanceof PkiInputError) throw toError(context ? `${context}: ${err.message}` : err.message);
    throw err;
  }
}

/** Runs a PKI library call on request input: its refusals become 400s with the library's message. */
export const pkiInput = <T>(run: () => T | Promise<T>) => pkiRefusalAs(badRequest, null, run);

/** CA private keys are stored sealed (SecretBox); in clear they live in memory for one signature. */
export function openPrivateKey(secrets: SecretBox, ca: Pick<CaCertificate, "privateKeyEncrypted" | "name">): string {
  if (!ca.privateKeyEncrypted) throw conflict(`CA certificate "${ca.name}" was uploaded without its private key; it cannot sign`);
  return secrets.decrypt(ca.privateKeyEncrypted);
}

/**
 * Who signs as this CA: subject + public key. A renewed CA keeps both, so certificates of the
 * old and the new one share a revocation list (and verify against either).
 */
export function issuerKeyOf(certificatePem: string): string {
  const cert = new X509Certificate(certificatePem);
  const spki = cert.publicKey.export({ type: "spki", format: "der" });
  return createHash("sha256").update(cert.subject).update("\n").update(spki).digest("hex");
}

/**
 * Serializes the PKI changes of one organization (default switch, first-CA rule, revocations
 * against revocation-list signing) on its Organization row. NO KEY UPDATE does not block
 * inserts elsewhere that merely reference the organization.
 */
export async function lockOrganizationPki(db: DbTx, organizationId: string): Promise<void> {
  await db.$queryRaw`SELECT id FROM "Organization" WHERE id = ${organizationId}::uuid FOR NO KEY UPDATE`;
}

/** Why this CA cannot sign device certificates now, or null when it can. */
export function unusableReason(ca: CaCertificate, now = new Date()): string | null {
  if (ca.retiredAt) return `CA certificate "${ca.name}" is retired`;
  if (!ca.privateKeyEncrypted) return `CA certificate "${ca.name}" was uploaded without its private key`;
  if (ca.notAfter <= now) return `CA certificate "${ca.name}" expired on ${ca.notAfter.toISOString()}`;
  if (ca.notBefore > now) return `CA certificate "${ca.name}" is not valid before ${ca.notBefore.toISOString()}`;
  return null;
}
