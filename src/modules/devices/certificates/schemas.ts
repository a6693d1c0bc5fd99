// The device certificate resource as the spec writes it (plus serialNumber, caId, status,
// the PEM certificate and renewedFromId), the request bodies, and the status filter shared
// with the organization-wide certificate lists.
import { z } from "zod";
import type { DeviceCertificate, Prisma } from "../../../generated/prisma/client.js";
import { pagingInput, pageOutput } from "../../../lib/paging.js";
import { REVOCATION_REASONS } from "../../../lib/pki/index.js";

export const CERTIFICATE_STATUSES = ["valid", "expired", "revoked"] as const;
export type CertificateStatus = (typeof CERTIFICATE_STATUSES)[number];

export const certificateStatusFilter = z.enum(CERTIFICATE_STATUSES).optional()
  .describe("valid: not revoked and not expired; expired: not revoked and past notAfter; revoked");

const ids = { deviceId: z.string().uuid(), certificateId: z.string().uuid() };

export const deviceCertificateInput = z.object(ids);

export const listDeviceCertificatesInput = z.object({ deviceId: ids.deviceId, status: certificateStatusFilter, ...pagingInput });

export const revokeInput = z.object({
  ...ids,
  reason: z.enum(REVOCATION_REASONS).describe("the revocation reason, published on the CA's revocation list"),
});

export const renewInput = z.object({
  ...ids,
  csrPem: z.string().min(1).max(64 * 1024).optional()
    .describe("a new PKCS#10 request (PEM); without it the new certificate certifies the same public key"),
  supersede: z.boolean().pipe(z.boolean()).default(false)
    .describe("revoke the renewed certificate with reason Superseded (default false: it stays valid until it expires)"),
});

export const deviceCertificateOutput = z.object({
  id: z.string().uuid(),
  deviceId: z.string().uuid(),
  fingerprint: z.string().describe("SHA-256 of the DER, lowercase hex"),
  subject: z.string(),
  issuer: z.string(),
  notBefore: z.string().datetime(),
  notAfter: z.string().datetime(),
  revoked: z.boolean(),
  revokedAt: z.string().datetime().optional(),
  revokeReason: z.enum(REVOCATION_REASONS).optional(),
  createdAt: z.string().datetime().describe("issue time"),
  serialNumber: z.string().describe("hexadecimal"),
  caId: z.string().uuid().nullable().describe("the issuing CA; null once that CA was deleted"),
  status: z.enum(CERTIFICATE_STATUSES),
  certificate: z.string().describe("PEM-encoded certificate"),
  renewedFromId: z.string().uuid().optional().describe("the certificate this one renewed"),
});
export type DeviceCertificateDto = z.infer<typeof deviceCertificateOutput>;

export const deviceCertificatePageOutput = pageOutput(deviceCertificateOutput);

export function statusOf(cert: Pick<DeviceCertificate, "revoked" | "notAfter">, now = new Date()): CertificateStatus {
  if (cert.revoked) return "revoked";
  return cert.notAfter <= now ? "expired" : "valid";
}

export function statusWhere(status: CertificateStatus | undefined, now = new Date()): Prisma.DeviceCertificateWhereInput {
  switch (status) {
    case "revoked":
      return { revoked: true };
    case "expired":
      return { revoked: false, notAfter: { lte: now } };
    case "valid":
      return { revoked: false, notAfter: { gt: now } };
    default:
      return {};
  }
}

export function toDeviceCertificateDto(cert: DeviceCertificate, now = new Date()): DeviceCertificateDto {
  return {
    id: cert.id,
    deviceId: cert.deviceId,
    fingerprint: cert.fingerprint,
    subject: cert.subject,
    issuer: cert.issuer,
    notBefore: cert.notBefore.toISOString(),
    notAfter: cert.notAfter.toISOString(),
    revoked: cert.revoked,
    ...(cert.revokedAt ? { revokedAt: cert.revokedAt.toISOString() } : {}),
    ...(cert.revokeReason ? { revokeReason: cert.revokeReason as DeviceCertificateDto["revokeReason"] } : {}),
    createdAt: cert.createdAt.toISOString(),
    serialNumber: cert.serialNumber,
    caId: cert.caId,
    status: statusOf(cert, now),
    certificate: cert.certificatePem,
    ...(cert.renewedFromId ? { renewedFromId: cert.renewedFromId } : {}),
  };
}
