// Trusted EK manufacturer CAs: add (a CA certificate PEM), list, remove. Each organization
// keeps its own: a TPM attested in one organization proves nothing to another.
import type { DbTx } from "../../db/client.js";
import type { Principal } from "../../trpc/principal.js";
import { conflict, invalidField, notFound } from "../../trpc/errors.js";
import { parseSingleCertificate } from "../../lib/pki/inspect.js";
import { PkiInputError } from "../../lib/pki/index.js";

export async function addEkCa(db: DbTx, principal: Principal, input: { name: string; certificate: string }) {
  let parsed;
  try {
    parsed = parseSingleCertificate(input.certificate, "certificate");
  } catch (err) {
    if (err instanceof PkiInputError) throw invalidField("certificate", err.message);
    throw err;
  }
  if (!parsed.info.isCa) throw invalidField("certificate", "is not a CA certificate (basicConstraints CA:TRUE): give the CA that issues the EK certificates");
  const existing = await db.trustedEkCa.findUnique({ where: { organizationId_fingerprint: { organizationId: principal.organizationId, fingerprint: parsed.info.fingerprint } }, select: { name: true } });
  if (existing) throw conflict(`This CA is trusted already (as "${existing.name}")`);
  return db.trustedEkCa.create({
    data: {
      organizationId: principal.organizationId,
      name: input.name,
      certificatePem: parsed.info.certificatePem,
      fingerprint: parsed.info.fingerprint,
      subject: parsed.info.subject,
      notAfter: parsed.info.notAfter,
      createdById: principal.userId ?? null,
    },
  });
}

export async function listEkCas(db: DbTx, organizationId: string, page: { limit: number; offset: number }) {
  const where = { organizationId };
  const [rows, total] = await Promise.all([
    db.trustedEkCa.findMany({ where, orderBy: [{ createdAt: "desc" }, { id: "asc" }], take: page.limit, skip: page.offset }),
    db.trustedEkCa.count({ where }),
  ]);
  return { rows, total };
}

export async function deleteEkCa(db: DbTx, organizationId: string, id: string) {
  const row = await db.trustedEkCa.findFirst({ where: { id, organizationId } });
  if (!row) throw notFound("Trusted EK CA");
  await db.trustedEkCa.delete({ where: { id } });
  return row;
}
