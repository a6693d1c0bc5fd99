// The trusted EK manufacturer CAs' payloads (docs/admission.md, "TPM-held keys").
import { z } from "zod";
import type { TrustedEkCa } from "../../generated/prisma/client.js";

export const createEkCaInput = z.object({
  name: z.string().trim().min(1).max(200).describe("what the operator calls it (the TPM vendor, a factory)"),
  certificate: z.string().min(1).max(64 * 1024).describe("the CA certificate (PEM) that issues the TPMs' EK certificates, or an intermediate of it"),
}).strict();

export const ekCaOutput = z.object({
  id: z.string().uuid(),
  name: z.string(),
  subject: z.string(),
  fingerprint: z.string().describe("SHA-256 (hex) of the certificate's DER"),
  notAfter: z.string().datetime(),
  certificate: z.string(),
  createdAt: z.string().datetime(),
});

export function toEkCaDto(row: TrustedEkCa): z.infer<typeof ekCaOutput> {
  return {
    id: row.id,
    name: row.name,
    subject: row.subject,
    fingerprint: row.fingerprint,
    notAfter: row.notAfter.toISOString(),
    certificate: row.certificatePem,
    createdAt: row.createdAt.toISOString(),
  };
}
