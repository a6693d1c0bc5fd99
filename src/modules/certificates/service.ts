// Device certificates across the organization: filtered lists, the ones about to expire, and
// statistics counted in one set-based query.
import type { DbTx } from "../../db/client.js";
import type { Prisma } from "../../generated/prisma/client.js";
import { pageOf } from "../../lib/paging.js";
import { statusWhere, type CertificateStatus } from "../devices/certificates/schemas.js";
import type { StatsDto } from "./schemas.js";

const DAY_MS = 24 * 60 * 60 * 1000;

async function page(db: DbTx, where: Prisma.DeviceCertificateWhereInput, orderBy: Prisma.DeviceCertificateOrderByWithRelationInput[], input: { limit: number; offset: number }) {
  const [items, total] = await Promise.all([
    db.deviceCertificate.findMany({ where, orderBy, take: input.limit, skip: input.offset }),
    db.deviceCertificate.count({ where }),
  ]);
  return pageOf(items, total, input.offset);
}

export function listCertificates(
  db: DbTx,
  organizationId: string,
  input: { deviceId?: string; status?: CertificateStatus; caId?: string; limit: number; offset: number },
) {
  const where: Prisma.DeviceCertificateWhereInput = {
    organizationId,
    ...(input.deviceId ? { deviceId: input.deviceId } : {}),
    ...(input.caId ? { caId: input.caId } : {}),
    ...statusWhere(input.status),
  };
  return page(db, where, [{ createdAt: "desc" }, { id: "desc" }], input);
}

/**
 * Valid certificates that expire within `days` and have not been renewed yet (a renewal that
 * is itself revoked does not count): what an operator still has to act on. Soonest first.
 */
export async function listExpiring(db: DbTx, organizationId: string, input: { days: number; limit: number; offset: number }) {
  const now = new Date();
  const where: Prisma.DeviceCertificateWhereInput = {
    organizationId,
    revoked: false,
    notAfter: { gt: now, lte: new Date(now.getTime() + input.days * DAY_MS) },
    renewals: { none: { revoked: false } },
  };
  const found = await page(db, where, [{ notAfter: "asc" }, { id: "asc" }], input);
  // Whoever acts on the list needs to know which device: the names of the page's devices, in
  // one query (a certificate has no foreign key to its device, so no join).
  const deviceIds = [...new Set(found.items.map((c) => c.deviceId))];
  const devices = deviceIds.length
    ? await db.device.findMany({ where: { organizationId, id: { in: deviceIds } }, select: { id: true, name: true } })
    : [];
  const names = new Map(devices.map((d) => [d.id, d.name]));
  return { ...found, items: found.items.map((c) => ({ ...c, deviceName: names.get(c.deviceId) ?? null })) };
}

interface CountRow {
  caId: string | null;
  total: number;
  valid: number;
  expiringSoon: number;
  expired: number;
  revoked: number;
}

export async function certificateStats(db: DbTx, organizationId: string, days: number): Promise<StatsDto> {
  // Timestamps are stored as UTC without zone: pass UTC text cast to timestamp so the
  // session's TimeZone setting never shifts the comparison.
  const now = new Date();
  const nowText = now.toISOString();
  const soonText = new Date(now.getTime() + days * DAY_MS).toISOString();
  const [rows, cas] = await Promise.all([
    db.$queryRaw<CountRow[]>`
      SELECT c."caId" AS "caId",
             count(*)::int AS total,
             count(*) FILTER (WHERE NOT c.revoked AND c."notAfter" > ${nowText}::timestamp)::int AS valid,
             count(*) FILTER (WHERE NOT c.revoked AND c."notAfter" > ${nowText}::timestamp AND c."notAfter" <= ${soonText}::timestamp
                              AND NOT EXISTS (SELECT 1 FROM "DeviceCertificate" r WHERE r."renewedFromId" = c.id AND NOT r.revoked))::int AS "expiringSoon",
             count(*) FILTER (WHERE NOT c.revoked AND c."notAfter" <= ${nowText}::timestamp)::int AS expired,
             count(*) FILTER (WHERE c.revoked)::int AS revoked
        FROM "DeviceCertificate" c
       WHERE c."organizationId" = ${organizationId}::uuid
       GROUP BY c."caId"`,
    db.caCertificate.findMany({ where: { organizationId }, select: { id: true, name: true, isDefault: true }, orderBy: { createdAt: "asc" } }),
  ]);
  const zero = { total: 0, valid: 0, expiringSoon: 0, expired: 0, revoked: 0 };
  const countsOf = (row: CountRow | undefined) =>
    row ? { total: row.total, valid: row.valid, expiringSoon: row.expiringSoon, expired: row.expired, revoked: row.revoked } : zero;
  const byCaId = new Map(rows.map((r) => [r.caId, r]));
  const byCa: StatsDto["byCa"] = cas.map((ca) => ({ caId: ca.id, name: ca.name, isDefault: ca.isDefault, ...countsOf(byCaId.get(ca.id)) }));
  const orphaned = byCaId.get(null);
  if (orphaned) byCa.push({ caId: null, name: null, isDefault: false, ...countsOf(orphaned) });
  const totals = { ...zero };
  for (const row of rows) for (const k of Object.keys(zero) as (keyof typeof zero)[]) totals[k] += row[k];
  return { ...totals, expiringWithinDays: days, byCa };
}
