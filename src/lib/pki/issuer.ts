/**
 * Checks and helpers for "a CA certificate plus its private key", shared by
 * CA upload/renewal, device issuance and CRL signing.
 */
import { createHash } from "node:crypto";
import { PkiInputError } from "./errors.js";
import { parseSingleCertificate, type ParsedCertificate } from "./inspect.js";
import { loadSigningKey, sameKey, type SigningKey } from "./keys.js";
import { toHex } from "./pem.js";
import { x509 } from "./provider.js";

/** Refuses certificates that may not act as a CA. */
export function assertIsCa(parsed: ParsedCertificate, what: string): void {
  const constraints = parsed.cert.getExtension(x509.BasicConstraintsExtension);
  if (!constraints) throw new PkiInputError(`${what} is not a CA (it has no basicConstraints extension)`);
  if (!constraints.ca) throw new PkiInputError(`${what} is not a CA (basicConstraints cA is false)`);
  // keyUsage is optional, but when present it must allow signing certificates.
  const usage = parsed.cert.getExtension(x509.KeyUsagesExtension);
  if (usage && (usage.usages & x509.KeyUsageFlags.keyCertSign) === 0) {
    throw new PkiInputError(`${what} may not sign certificates (its keyUsage lacks keyCertSign)`);
  }
}

/** Refuses certificates outside their validity period at `now`. */
export function assertValidAt(parsed: ParsedCertificate, now: Date, what: string): void {
  const { notBefore, notAfter } = parsed.info;
  if (now.getTime() < notBefore.getTime()) {
    throw new PkiInputError(`${what} is not yet valid (notBefore ${notBefore.toISOString()})`);
  }
  if (now.getTime() > notAfter.getTime()) {
    throw new PkiInputError(`${what} has expired (notAfter ${notAfter.toISOString()})`);
  }
}

export function assertKeyMatches(parsed: ParsedCertificate, key: { publicKey: SigningKey["publicKey"] }, message: string): void {
  if (!sameKey(parsed.publicKey, key.publicKey)) throw new PkiInputError(message);
}

/**
 * The identifier issued certificates and CRLs point to (authorityKeyIdentifier).
 * It must equal the CA's own subjectKeyIdentifier when there is one: uploaded
 * CAs may have computed it with another method than ours.
 */
export async function keyIdentifierOf(parsed: ParsedCertificate): Promise<string> {
  const ski = parsed.cert.getExtension(x509.SubjectKeyIdentifierExtension);
  return ski ? ski.keyId : toHex(await parsed.cert.publicKey.getKeyIdentifier());
}

export interface Issuer {
  ca: ParsedCertificate;
  key: SigningKey;
  /** Hex key identifier for authorityKeyIdentifier extensions. */
  keyId: string;
}

/** Loads a CA certificate and its private key for signing, with all sanity checks. */
async function openIssuer(caCertificatePem: string, caPrivateKeyPem: string): Promise<Issuer> {
  const ca = parseSingleCertificate(caCertificatePem, "CA certificate");
  assertIsCa(ca, "CA certificate");
  const key = await loadSigningKey(caPrivateKeyPem, "CA private key");
  assertKeyMatches(ca, key, "CA private key does not match the CA certificate");
  return { ca, key, keyId: await keyIdentifierOf(ca) };
}

/**
 * The issuers opened lately, by a digest of their certificate and key: parsing the CA, importing
 * its key and checking that they belong together took about 19 ms of CPU, more than a third of
 * issuing one device certificate (bench/support/seed-identities.ts, docs/benchmarks.md), and
 * every enrollment and renewal signs with the same few CAs. A failure is not kept.
 */
const opened = new Map<string, Promise<Issuer>>();
const OPENED_MAX = 16;

export function loadIssuer(caCertificatePem: string, caPrivateKeyPem: string): Promise<Issuer> {
  const id = createHash("sha256").update(caCertificatePem).update("\0").update(caPrivateKeyPem).digest("hex");
  let issuer = opened.get(id);
  if (!issuer) {
    issuer = openIssuer(caCertificatePem, caPrivateKeyPem);
    issuer.catch(() => opened.delete(id));
    if (opened.size >= OPENED_MAX) opened.delete(opened.keys().next().value!);
    opened.set(id, issuer);
  }
  return issuer;
}
