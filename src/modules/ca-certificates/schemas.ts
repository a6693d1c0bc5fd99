// The CA certificate resource as the spec writes it (plus hasPrivateKey, origin and
// renewedFromId), the request bodies, and the mapper from the database row.
import { z } from "zod";
import type { CaCertificate } from "../../generated/prisma/client.js";
import { KEY_ALGORITHMS } from "../../lib/pki/index.js";
import { pagingInput, pageOutput } from "../../lib/paging.js";

export const CA_ORIGINS = ["generated", "uploaded", "renewed"] as const;
/** 100 years: the PKI library's upper bound for any certificate lifetime. */
export const MAX_CA_VALIDITY_DAYS = 36_500;
export const DEFAULT_CA_VALIDITY_DAYS = 3_650;

const name = z.string().trim().min(1).max(100).describe("human-readable name, unique in the organization");
const validityDays = z.number().int().min(1).max(MAX_CA_VALIDITY_DAYS);
const pem = z.string().min(1).max(256 * 1024);

export const caIdInput = z.object({ id: z.string().uuid() });

export const listCaInput = z.object({ ...pagingInput });

export const generateCaInput = z.object({
  name,
  commonName: z.string().trim().min(1).max(64).describe("subject common name (CN) of the new root CA"),
  validityDays: validityDays.default(DEFAULT_CA_VALIDITY_DAYS).describe(`lifetime in days (default ${DEFAULT_CA_VALIDITY_DAYS})`),
  keyAlgorithm: z.enum(KEY_ALGORITHMS).default("ECDSA-P256"),
});

export const uploadCaInput = z.object({
  name,
  certificatePem: pem.describe("the CA certificate (PEM), optionally followed by its issuers, nearest first"),
  privateKeyPem: pem.optional().describe(
    "the CA's unencrypted private key (PKCS#8, SEC1 or PKCS#1 PEM); without it the CA is trusted and downloadable but signs nothing",
  ),
});

export const renewCaInput = caIdInput.extend({
  name: name.optional().describe('name of the renewed CA (default: "<old name> (renewed <date>)")'),
  validityDays: validityDays.optional().describe("lifetime in days (default: the lifetime of the CA being renewed)"),
});

export const caCertificateOutput = z.object({
  id: z.string().uuid(),
  name: z.string(),
  fingerprint: z.string().describe("SHA-256 of the DER, lowercase hex"),
  isRoot: z.boolean(),
  isDefault: z.boolean().describe("the signing CA for new device certificates"),
  notBefore: z.string().datetime(),
  notAfter: z.string().datetime(),
  retiredAt: z.string().datetime().nullable().describe("null while the CA is in service"),
  createdAt: z.string().datetime(),
  subject: z.string(),
  issuer: z.string(),
  serialNumber: z.string().describe("hexadecimal"),
  keyAlgorithm: z.string().describe('public-key algorithm and size, e.g. "ECDSA P-256", "RSA 4096"'),
  signatureAlgorithm: z.string(),
  subjectAltNames: z.array(z.string()),
  certificate: z.string().describe("PEM-encoded public certificate"),
  hasPrivateKey: z.boolean().describe("false for a CA uploaded without its key: it cannot sign"),
  origin: z.enum(CA_ORIGINS),
  renewedFromId: z.string().uuid().nullable(),
});
export type CaCertificateDto = z.infer<typeof caCertificateOutput>;

export const caPageOutput = pageOutput(caCertificateOutput);

export const deleteCaOutput = z.object({ id: z.string().uuid(), deleted: z.literal(true) });

export function toCaCertificateDto(ca: CaCertificate): CaCertificateDto {
  return {
    id: ca.id,
    name: ca.name,
    fingerprint: ca.fingerprint,
    isRoot: ca.isRoot,
    isDefault: ca.isDefault,
    notBefore: ca.notBefore.toISOString(),
    notAfter: ca.notAfter.toISOString(),
    retiredAt: ca.retiredAt?.toISOString() ?? null,
    createdAt: ca.createdAt.toISOString(),
    subject: ca.subject,
    issuer: ca.issuer,
    serialNumber: ca.serialNumber,
    keyAlgorithm: ca.keyAlgorithm,
    signatureAlgorithm: ca.signatureAlgorithm,
    subjectAltNames: ca.subjectAltNames,
    certificate: ca.certificatePem,
    hasPrivateKey: ca.privateKeyEncrypted !== null,
    origin: ca.origin as CaCertificateDto["origin"],
    renewedFromId: ca.renewedFromId,
  };
}
