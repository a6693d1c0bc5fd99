// Device certificate rules: issuing from a CSR with the organization's default CA, listing,
// revoking and renewing, plus the functions enrollment and device authentication call.
// Every query carries the organization; a device or certificate of another tenant is a 404.
import type { DbTx } from "../../../db/client.js";
import type { CaCertificate, DeviceCertificate } from "../../../generated/prisma/client.js";
import type { SecretBox } from "../../../lib/crypto.js";
import { pageOf } from "../../../lib/paging.js";
import {
  issueDeviceCertificate,
  issueDeviceCertificateFromPublicKey,
  type IssuedDeviceCertificate,
  type RevocationReason,
} from "../../../lib/pki/index.js";
import { conflict, notFound } from "../../../trpc/errors.js";
import { markRevocationListsStale } from "../../ca-certificates/crl.js";
import { lockOrganizationPki, openPrivateKey, pkiInput, unusableReason } from "../../ca-certificates/signing.js";
import { statusWhere, type CertificateStatus } from "./schemas.js";

/** Lifetime of device certificates until the configuration carries its own setting. */
export const DEFAULT_DEVICE_CERTIFICATE_VALIDITY_DAYS = 365;

async function assertDeviceExists(db: DbTx, organizationId: string, deviceId: string): Promise<void> {
  const device = await db.device.findFirst({ where: { id: deviceId, organizationId }, select: { id: true } });
  if (!device) throw notFound("Device");
}

/** The CA that signs new device certificates of the organization; 409 when there is none usable. */
export async function defaultSigningCa(db: DbTx, organizationId: string): Promise<CaCertificate> {
  const ca = await db.caCertificate.findFirst({ where: { organizationId, isDefault: true } });
  if (!ca) {
    throw conflict("The organization has no default CA certificate: generate or upload a CA with its private key and make it the default");
  }
  const reason = unusableReason(ca);
  if (reason) throw conflict(`The organization's default CA cannot sign: ${reason}; renew it or make another CA the default`);
  return ca;
}

type Signing = (ca: { caCertificatePem: string; caPrivateKeyPem: string }) => Promise<IssuedDeviceCertificate>;

/** Signs with the default CA and stores the result: the one path every device certificate takes. */
async function issueAndStore(
  db: DbTx,
  secrets: SecretBox,
  target: { organizationId: string; deviceId: string; renewedFromId?: string },
  sign: Signing,
) {
  const ca = await defaultSigningCa(db, target.organizationId);
  const issued = await pkiInput(() => sign({ caCertificatePem: ca.certificatePem, caPrivateKeyPem: openPrivateKey(secrets, ca) }));
  const info = issued.inspected;
  const record = await db.deviceCertificate.create({
    data: {
      organizationId: target.organizationId,
      deviceId: target.deviceId,
      caId: ca.id,
      issuerKey: ca.issuerKey,
      serialNumber: info.serialNumber,
      fingerprint: info.fingerprint,
      subject: info.subject,
      issuer: info.issuer,
      keyAlgorithm: info.keyAlgorithm,
      notBefore: info.notBefore,
      notAfter: info.notAfter,
      certificatePem: issued.certificatePem,
      renewedFromId: target.renewedFromId ?? null,
    },
  });
  return { certificatePem: issued.certificatePem, caChainPems: [ca.certificatePem, ...ca.chainPems], record };
}

/**
 * For enrollment, inside its transaction: a certificate for the device from its CSR (signature
 * checked, subject replaced by CN=<deviceId>), signed by the organization's default CA.
 * 409 when the organization has no usable default CA, 400 for a bad CSR, 404 for an unknown device.
 */
export async function issueCertificateForDevice(
  db: DbTx,
  secrets: SecretBox,
  params: { organizationId: string; deviceId: string; csrPem: string; validityDays?: number },
): Promise<{ certificatePem: string; caChainPems: string[]; record: DeviceCertificate }> {
  await assertDeviceExists(db, params.organizationId, params.deviceId);
  const validityDays = params.validityDays ?? DEFAULT_DEVICE_CERTIFICATE_VALIDITY_DAYS;
  return issueAndStore(db, secrets, params, (ca) =>
    issueDeviceCertificate({ ...ca, csrPem: params.csrPem, deviceId: params.deviceId, validityDays }),
  );
}

async function revokeWhere(db: DbTx, organizationId: string, where: { deviceId: string; id?: string }, reason: RevocationReason) {
  await lockOrganizationPki(db, organizationId);
  const targets = await db.deviceCertificate.findMany({
    where: { organizationId, ...where, revoked: false },
    select: { id: true, issuerKey: true },
  });
  if (targets.length === 0) return 0;
  await db.deviceCertificate.updateMany({
    where: { id: { in: targets.map((t) => t.id) } },
    data: { revoked: true, revokedAt: new Date(), revokeReason: reason },
  });
  await markRevocationListsStale(db, organizationId, targets.map((t) => t.issuerKey));
  return targets.length;
}

/** For device deletion or decommissioning: revokes every certificate of the device not yet revoked. */
export function revokeAllCertificatesOfDevice(db: DbTx, organizationId: string, deviceId: string, reason: RevocationReason): Promise<number> {
  return revokeWhere(db, organizationId, { deviceId }, reason);
}

export async function listDeviceCertificates(
  db: DbTx,
  organizationId: string,
  input: { deviceId: string; status?: CertificateStatus; limit: number; offset: number },
) {
  await assertDeviceExists(db, organizationId, input.deviceId);
  const where = { organizationId, deviceId: input.deviceId, ...statusWhere(input.status) };
  const [items, total] = await Promise.all([
    db.deviceCertificate.findMany({ where, orderBy: [{ createdAt: "desc" }, { id: "desc" }], take: input.limit, skip: input.offset }),
    db.deviceCertificate.count({ where }),
  ]);
  return pageOf(items, total, input.offset);
}

/** Spec op 16: 404 for an unknown device, an unknown certificate, or one of another device. */
export async function getDeviceCertificate(db: DbTx, organizationId: string, deviceId: string, certificateId: string) {
  await assertDeviceExists(db, organizationId, deviceId);
  const cert = await db.deviceCertificate.findFirst({ where: { id: certificateId, deviceId, organizationId } });
  if (!cert) throw notFound("Certificate");
  return cert;
}

export async function revokeDeviceCertificate(
  db: DbTx,
  organizationId: string,
  input: { deviceId: string; certificateId: string; reason: RevocationReason },
) {
  const cert = await getDeviceCertificate(db, organizationId, input.deviceId, input.certificateId);
  const revoked = await revokeWhere(db, organizationId, { deviceId: cert.deviceId, id: cert.id }, input.reason);
  // Zero means it was revoked already (possibly by a concurrent call that took the lock first).
  if (revoked === 0) {
    const current = await db.deviceCertificate.findUniqueOrThrow({ where: { id: cert.id } });
    throw conflict(`Certificate was already revoked on ${current.revokedAt?.toISOString()} (${current.revokeReason})`);
  }
  return db.deviceCertificate.findUniqueOrThrow({ where: { id: cert.id } });
}

/**
 * A new certificate for the device from a new CSR, or for the same public key when none is
 * given, signed by the current default CA. The old one stays valid unless `supersede` revokes
 * it (reason Superseded) in the same transaction.
 */
export async function renewDeviceCertificate(
  db: DbTx,
  secrets: SecretBox,
  input: { organizationId: string; deviceId: string; certificateId: string; csrPem?: string; supersede: boolean; validityDays?: number },
) {
  const old = await getDeviceCertificate(db, input.organizationId, input.deviceId, input.certificateId);
  if (old.revoked) throw conflict("Certificate is revoked; a revoked certificate is not renewed (enroll the device again)");
  const base = { deviceId: old.deviceId, validityDays: input.validityDays ?? DEFAULT_DEVICE_CERTIFICATE_VALIDITY_DAYS };
  const { record } = await issueAndStore(
    db,
    secrets,
    { organizationId: input.organizationId, deviceId: old.deviceId, renewedFromId: old.id },
    (ca) =>
      input.csrPem
        ? issueDeviceCertificate({ ...ca, ...base, csrPem: input.csrPem })
        : issueDeviceCertificateFromPublicKey({ ...ca, ...base, publicKeyPem: old.certificatePem }),
  );
  if (input.supersede) await revokeWhere(db, input.organizationId, { deviceId: old.deviceId, id: old.id }, "Superseded");
  return record;
}
