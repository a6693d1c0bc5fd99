// Certificate revocation lists, one per signing identity (issuerKey) of an organization.
// Revocations only mark the stored list stale, inside their own transaction (so any code that
// revokes, even without access to CA keys, keeps the list right); the next fetch signs a new
// list with the next cRLNumber. A fetch also re-signs a list that is close to its nextUpdate,
// so a list handed out is always valid for at least REFRESH_MARGIN_MS.
import type { Db, DbTx } from "../../db/client.js";
import type { CaCertificate, CertificateRevocationList } from "../../generated/prisma/client.js";
import type { SecretBox } from "../../lib/crypto.js";
import { buildCrl, DEFAULT_CRL_VALIDITY_DAYS, type RevocationReason } from "../../lib/pki/index.js";
import { conflict } from "../../trpc/errors.js";
import { lockOrganizationPki, openPrivateKey, pkiRefusalAs } from "./signing.js";

const DAY_MS = 24 * 60 * 60 * 1000;
const REFRESH_MARGIN_MS = DAY_MS;

export async function markRevocationListsStale(db: DbTx, organizationId: string, issuerKeys: string[]): Promise<void> {
  if (issuerKeys.length === 0) return;
  await db.certificateRevocationList.updateMany({
    where: { organizationId, issuerKey: { in: [...new Set(issuerKeys)] } },
    data: { stale: true },
  });
}

function isFresh(list: CertificateRevocationList): boolean {
  return !list.stale && list.nextUpdate.getTime() - Date.now() > REFRESH_MARGIN_MS;
}

/** The CA's current revocation list, signing a new one first when needed. */
export async function currentRevocationList(prisma: Db, secrets: SecretBox, ca: CaCertificate): Promise<CertificateRevocationList> {
  const key = { organizationId_issuerKey: { organizationId: ca.organizationId, issuerKey: ca.issuerKey } };
  const stored = await prisma.certificateRevocationList.findUnique({ where: key });
  if (stored && isFresh(stored)) return stored;
  return prisma.$transaction(async (tx) => {
    // Under the organization's PKI lock no revocation can slip in between reading the
    // entries and clearing `stale`; a concurrent fetch finds the fresh list and stops here.
    await lockOrganizationPki(tx, ca.organizationId);
    const current = await tx.certificateRevocationList.findUnique({ where: key });
    if (current && isFresh(current)) return current;
    const revoked = await tx.deviceCertificate.findMany({
      where: { organizationId: ca.organizationId, issuerKey: ca.issuerKey, revoked: true },
      select: { serialNumber: true, revokedAt: true, revokeReason: true },
      orderBy: [{ revokedAt: "asc" }, { serialNumber: "asc" }],
    });
    const crlNumber = (current?.crlNumber ?? 0) + 1;
    const thisUpdate = new Date(Math.floor(Date.now() / 1000) * 1000);
    const nextUpdate = new Date(thisUpdate.getTime() + DEFAULT_CRL_VALIDITY_DAYS * DAY_MS);
    // A refusal here is about the CA (e.g. its keyUsage lacks cRLSign), not about the request.
    const { pem } = await pkiRefusalAs(conflict, `CA certificate "${ca.name}" cannot sign a revocation list`, () =>
      buildCrl({
        caCertificatePem: ca.certificatePem,
        caPrivateKeyPem: openPrivateKey(secrets, ca),
        entries: revoked.map((c) => ({
          serialNumber: c.serialNumber,
          revokedAt: c.revokedAt ?? thisUpdate,
          reason: (c.revokeReason ?? "Other") as RevocationReason,
        })),
        crlNumber,
        thisUpdate,
        nextUpdate,
      }),
    );
    const data = { crlNumber, thisUpdate, nextUpdate, pem, stale: false };
    return tx.certificateRevocationList.upsert({
      where: key,
      create: { organizationId: ca.organizationId, issuerKey: ca.issuerKey, ...data },
      update: data,
    });
  });
}

/** Drops the stored list of an identity once no CA of the organization signs as it any more. */
export async function forgetRevocationListIfUnused(db: DbTx, organizationId: string, issuerKey: string): Promise<void> {
  const users = await db.caCertificate.count({ where: { organizationId, issuerKey } });
  if (users === 0) await db.certificateRevocationList.deleteMany({ where: { organizationId, issuerKey } });
}
