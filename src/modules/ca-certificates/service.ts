// CA certificate rules. Every query carries the caller's organization, so another tenant's CA
// is simply not found (404). Changes that touch "which CA is the default" take the
// organization's PKI lock first, which keeps exactly one default per organization.
import type { DbTx } from "../../db/client.js";
import type { CaCertificate } from "../../generated/prisma/client.js";
import type { SecretBox } from "../../lib/crypto.js";
import { pageOf } from "../../lib/paging.js";
import { CLOCK_SKEW_MS, generateSelfSignedCa, parseCaUpload, renewCa, type CertificateInfo } from "../../lib/pki/index.js";
import { badRequest, conflict, notFound } from "../../trpc/errors.js";
import { forgetRevocationListIfUnused } from "./crl.js";
import { MAX_CA_VALIDITY_DAYS, type generateCaInput, type renewCaInput, type uploadCaInput } from "./schemas.js";
import { issuerKeyOf, lockOrganizationPki, openPrivateKey, pkiInput, pkiRefusalAs, unusableReason } from "./signing.js";
import type { z } from "zod";
import { counted } from "../../lib/plural.js";

const DAY_MS = 24 * 60 * 60 * 1000;

export async function findCa(db: DbTx, organizationId: string, id: string): Promise<CaCertificate> {
  const ca = await db.caCertificate.findFirst({ where: { id, organizationId } });
  if (!ca) throw notFound("CA certificate");
  return ca;
}

export async function listCas(db: DbTx, organizationId: string, page: { limit: number; offset: number }) {
  const where = { organizationId };
  const [items, total] = await Promise.all([
    db.caCertificate.findMany({ where, orderBy: [{ createdAt: "desc" }, { id: "desc" }], take: page.limit, skip: page.offset }),
    db.caCertificate.count({ where }),
  ]);
  return pageOf(items, total, page.offset);
}

interface NewCa {
  name: string;
  certificate: CertificateInfo;
  chainPems: string[];
  privateKeyPem: string | null;
  origin: "generated" | "uploaded" | "renewed";
  renewedFromId?: string;
  /** default: only when the organization has no default yet (the first CA becomes the default) */
  makeDefault?: boolean;
}

async function insertCa(db: DbTx, secrets: SecretBox, organizationId: string, ca: NewCa): Promise<CaCertificate> {
  await lockOrganizationPki(db, organizationId);
  // Checked before inserting for a clear message; the unique indexes stay the backstop.
  const sameName = await db.caCertificate.findFirst({ where: { organizationId, name: ca.name }, select: { id: true } });
  if (sameName) throw conflict(`A CA certificate named "${ca.name}" already exists`);
  const sameCert = await db.caCertificate.findFirst({ where: { organizationId, fingerprint: ca.certificate.fingerprint }, select: { name: true } });
  if (sameCert) throw conflict(`This certificate is already in the organization as "${sameCert.name}"`);

  const canSign = ca.privateKeyPem !== null;
  const isDefault = ca.makeDefault ?? (canSign && (await db.caCertificate.count({ where: { organizationId, isDefault: true } })) === 0);
  const info = ca.certificate;
  return db.caCertificate.create({
    data: {
      organizationId,
      name: ca.name,
      subject: info.subject,
      issuer: info.issuer,
      serialNumber: info.serialNumber,
      keyAlgorithm: info.keyAlgorithm,
      signatureAlgorithm: info.signatureAlgorithm,
      subjectAltNames: info.subjectAltNames,
      fingerprint: info.fingerprint,
      notBefore: info.notBefore,
      notAfter: info.notAfter,
      isRoot: info.isSelfSigned,
      isDefault,
      certificatePem: info.certificatePem,
      chainPems: ca.chainPems,
      privateKeyEncrypted: ca.privateKeyPem === null ? null : secrets.encrypt(ca.privateKeyPem),
      issuerKey: issuerKeyOf(info.certificatePem),
      origin: ca.origin,
      renewedFromId: ca.renewedFromId ?? null,
    },
  });
}

export async function generateCa(db: DbTx, secrets: SecretBox, organizationId: string, input: z.infer<typeof generateCaInput>) {
  const generated = await pkiInput(() =>
    generateSelfSignedCa({ commonName: input.commonName, validityDays: input.validityDays, keyAlgorithm: input.keyAlgorithm }),
  );
  return insertCa(db, secrets, organizationId, {
    name: input.name,
    certificate: generated.inspected,
    chainPems: [],
    privateKeyPem: generated.privateKeyPem,
    origin: "generated",
  });
}

export async function uploadCa(db: DbTx, secrets: SecretBox, organizationId: string, input: z.infer<typeof uploadCaInput>) {
  const upload = await pkiInput(() => parseCaUpload({ certificatePem: input.certificatePem, privateKeyPem: input.privateKeyPem }));
  return insertCa(db, secrets, organizationId, {
    name: input.name,
    certificate: upload.certificate,
    chainPems: upload.chainPems,
    privateKeyPem: upload.privateKeyPem,
    origin: "uploaded",
  });
}

/** The original lifetime, so that a renewal without `validityDays` keeps the CA's rhythm. */
function lifetimeDays(ca: CaCertificate): number {
  const days = Math.round((ca.notAfter.getTime() - ca.notBefore.getTime() - CLOCK_SKEW_MS) / DAY_MS);
  return Math.min(Math.max(days, 1), MAX_CA_VALIDITY_DAYS);
}

/**
 * Same subject and key, new serial and validity, as a new CA row. The old one stays (it still
 * verifies what it issued) until it expires or is deleted; the default moves to the new one.
 */
export async function renewCaCertificate(db: DbTx, secrets: SecretBox, organizationId: string, input: z.infer<typeof renewCaInput>) {
  await lockOrganizationPki(db, organizationId);
  const old = await findCa(db, organizationId, input.id);
  if (old.retiredAt) throw conflict(`CA certificate "${old.name}" is retired; a retired CA is not renewed`);
  const privateKeyPem = openPrivateKey(secrets, old);
  // What the library refuses here is the CA itself (an intermediate, say), not the request.
  const renewed = await pkiRefusalAs(conflict, `CA certificate "${old.name}" cannot be renewed`, () =>
    renewCa({ certificatePem: old.certificatePem, privateKeyPem, validityDays: input.validityDays ?? lifetimeDays(old) }),
  );
  if (old.isDefault) await db.caCertificate.update({ where: { id: old.id }, data: { isDefault: false } });
  const suffix = ` (renewed ${new Date().toISOString().slice(0, 10)})`;
  return insertCa(db, secrets, organizationId, {
    name: input.name ?? old.name.slice(0, 100 - suffix.length) + suffix,
    certificate: renewed.inspected,
    chainPems: [],
    privateKeyPem,
    origin: "renewed",
    renewedFromId: old.id,
    ...(old.isDefault ? { makeDefault: true } : {}),
  });
}

/** A retired CA signs no new device certificate and cannot be the default. */
export async function retireCa(db: DbTx, organizationId: string, id: string) {
  await lockOrganizationPki(db, organizationId);
  const ca = await findCa(db, organizationId, id);
  if (ca.retiredAt) throw conflict(`CA certificate "${ca.name}" was already retired on ${ca.retiredAt.toISOString()}`);
  return db.caCertificate.update({ where: { id }, data: { retiredAt: new Date(), isDefault: false } });
}

/** Spec op 19: exactly one default per organization, switched in one transaction. */
export async function setDefaultCa(db: DbTx, organizationId: string, id: string) {
  await lockOrganizationPki(db, organizationId);
  const ca = await findCa(db, organizationId, id);
  if (ca.retiredAt) throw badRequest(`Bad request: CA certificate "${ca.name}" is retired; a retired CA cannot be the default`);
  const reason = unusableReason(ca);
  if (reason) throw badRequest(`Bad request: ${reason}; it cannot sign device certificates`);
  if (ca.isDefault) return ca;
  await db.caCertificate.updateMany({ where: { organizationId, isDefault: true }, data: { isDefault: false } });
  return db.caCertificate.update({ where: { id }, data: { isDefault: true } });
}

export async function deleteCa(db: DbTx, organizationId: string, id: string) {
  await lockOrganizationPki(db, organizationId);
  const ca = await findCa(db, organizationId, id);
  if (ca.isDefault) {
    throw conflict(`CA certificate "${ca.name}" is the default signing CA; make another CA the default or retire this one first`);
  }
  const valid = await db.deviceCertificate.count({ where: { caId: id, revoked: false, notAfter: { gt: new Date() } } });
  if (valid > 0) {
    throw conflict(`CA certificate "${ca.name}" has issued ${counted(valid, "device certificate")} that ${valid === 1 ? "is" : "are"} still valid; revoke them or wait until they expire`);
  }
  await db.caCertificate.delete({ where: { id } });
  await forgetRevocationListIfUnused(db, organizationId, ca.issuerKey);
  return { id, deleted: true as const };
}
