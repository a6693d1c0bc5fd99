/**
 * Certificate revocation lists (X.509 v2, RFC 5280 section 5).
 */
import { PkiInputError } from "./errors.js";
import { loadIssuer } from "./issuer.js";
import { addDays, floorToSecond, resolveNow } from "./params.js";
import { toPem } from "./pem.js";
import { x509 } from "./provider.js";

/** Revocation reasons offered to users (usable as a zod enum). */
export const REVOCATION_REASONS = [
  "Key compromise",
  "CA compromise",
  "Affiliation changed",
  "Superseded",
  "Cessation of operation",
  "Certificate hold",
  "Other",
] as const;
export type RevocationReason = (typeof REVOCATION_REASONS)[number];

/** RFC 5280 CRLReason codes for each user-facing reason. */
export const REVOCATION_REASON_CODES: Readonly<Record<RevocationReason, x509.X509CrlReason>> = {
  "Key compromise": x509.X509CrlReason.keyCompromise, // 1
  "CA compromise": x509.X509CrlReason.cACompromise, // 2
  "Affiliation changed": x509.X509CrlReason.affiliationChanged, // 3
  Superseded: x509.X509CrlReason.superseded, // 4
  "Cessation of operation": x509.X509CrlReason.cessationOfOperation, // 5
  "Certificate hold": x509.X509CrlReason.certificateHold, // 6
  Other: x509.X509CrlReason.unspecified, // 0
};

/** nextUpdate when the caller gives none (RFC 5280 requires one). */
export const DEFAULT_CRL_VALIDITY_DAYS = 7;

export interface CrlEntryInput {
  /** Hex serial number as shown by `inspectCertificate` (colons and case are tolerated). */
  serialNumber: string;
  revokedAt: Date;
  reason: RevocationReason;
}

export interface BuildCrlParams {
  caCertificatePem: string;
  caPrivateKeyPem: string;
  entries: readonly CrlEntryInput[];
  /** Monotonically increasing CRL number (cRLNumber extension). */
  crlNumber: number;
  /** Default: now. */
  thisUpdate?: Date | undefined;
  /** Default: thisUpdate + 7 days. */
  nextUpdate?: Date | undefined;
}

/**
 * Builds a CRL signed by the CA, with cRLNumber and authorityKeyIdentifier
 * extensions and a reasonCode per entry. "Other" maps to unspecified (0),
 * which RFC 5280 says to express by *omitting* the reasonCode extension;
 * x509 does exactly that, and readers report such entries as unspecified.
 */
export async function buildCrl(params: BuildCrlParams): Promise<{ der: ArrayBuffer; pem: string }> {
  const crlNumber = params.crlNumber;
  if (!Number.isSafeInteger(crlNumber) || crlNumber < 0) {
    throw new PkiInputError("crlNumber must be a non-negative integer");
  }
  const thisUpdate = floorToSecond(resolveNow(params.thisUpdate));
  const nextUpdate = floorToSecond(params.nextUpdate ?? addDays(thisUpdate, DEFAULT_CRL_VALIDITY_DAYS));
  if (Number.isNaN(nextUpdate.getTime()) || nextUpdate.getTime() <= thisUpdate.getTime()) {
    throw new PkiInputError("nextUpdate must be a valid date after thisUpdate");
  }
  const entries = toCrlEntries(params.entries);

  const { ca, key, keyId } = await loadIssuer(params.caCertificatePem, params.caPrivateKeyPem);
  const usage = ca.cert.getExtension(x509.KeyUsagesExtension);
  if (usage && (usage.usages & x509.KeyUsageFlags.cRLSign) === 0) {
    throw new PkiInputError("CA certificate may not sign CRLs (its keyUsage lacks cRLSign)");
  }

  const crl = await x509.X509CrlGenerator.create({
    issuer: ca.cert.subjectName, // exact encoding of the CA's subject
    thisUpdate,
    nextUpdate,
    entries,
    extensions: [
      new x509.Extension("2.5.29.20", false, derInteger(crlNumber)), // cRLNumber
      new x509.AuthorityKeyIdentifierExtension(keyId),
    ],
    signingKey: key.privateKey,
    signingAlgorithm: key.signingAlgorithm,
  });
  return { der: crl.rawData, pem: toPem(crl.rawData, "X509 CRL") };
}

function toCrlEntries(entries: readonly CrlEntryInput[]): x509.X509CrlEntryParams[] {
  if (!Array.isArray(entries as unknown)) throw new PkiInputError("entries must be an array");
  const seen = new Set<string>();
  return entries.map((entry, index) => {
    const hex = typeof entry.serialNumber === "string" ? entry.serialNumber.replace(/[:\s]/g, "").toLowerCase() : "";
    // 20 octets max (RFC 5280), plus one octet of sign padding some tools print.
    if (!/^[0-9a-f]{1,42}$/.test(hex)) {
      throw new PkiInputError(`entries[${index}].serialNumber must be a hexadecimal serial number`);
    }
    const canonical = BigInt(`0x${hex}`).toString(16); // "00ab" and "ab" are the same certificate
    if (seen.has(canonical)) throw new PkiInputError(`serial number ${canonical} is listed twice`);
    seen.add(canonical);
    if (!(entry.revokedAt instanceof Date) || Number.isNaN(entry.revokedAt.getTime())) {
      throw new PkiInputError(`entries[${index}].revokedAt must be a valid Date`);
    }
    if (!Object.hasOwn(REVOCATION_REASON_CODES, entry.reason)) {
      throw new PkiInputError(`entries[${index}].reason must be one of: ${REVOCATION_REASONS.join(", ")}`);
    }
    return {
      serialNumber: canonical.length % 2 ? `0${canonical}` : canonical,
      revocationDate: floorToSecond(entry.revokedAt),
      reason: REVOCATION_REASON_CODES[entry.reason],
    };
  });
}

/** DER INTEGER for a non-negative number (minimal two's complement, always short-form length). */
function derInteger(value: number): Uint8Array<ArrayBuffer> {
  let hex = BigInt(value).toString(16);
  if (hex.length % 2) hex = `0${hex}`;
  if (parseInt(hex.slice(0, 2), 16) & 0x80) hex = `00${hex}`; // keep it positive
  const body = Buffer.from(hex, "hex");
  return new Uint8Array([0x02, body.length, ...body]);
}
