// Device rules: list (filters, sorting, paging in SQL), get, update, delete, labels, claim
// release and the activity log. Tenant isolation is in every query: another organization's
// device is simply not found (404).
import type { DbTx } from "../../db/client.js";
import type { RawDatabase } from "../../db/adapters.js";
import { driverRows } from "../../db/driver-reads.js";
import { Prisma } from "../../generated/prisma/client.js";
import { conflict, notFound, badRequest } from "../../trpc/errors.js";
import { recordDeviceEvent, type Actor } from "./activity.js";
import { labelDiff, labelsOf, MAX_LABELS_PER_DEVICE, type Labels } from "./labels.js";
import { and, DEVICE_COLUMNS, organizationCondition, selectorCondition } from "./sql.js";
import { likePattern } from "../../lib/like.js";
import type { DeviceEventRow, DeviceRow } from "./schemas.js";
import { revokeCertificatesOfDevices } from "./certificate-bridge.js";

export const DEVICE_SORT_FIELDS = ["createdAt", "updatedAt", "name", "status", "lastSeenAt", "statusChangedAt"] as const;
export type DeviceSortField = (typeof DEVICE_SORT_FIELDS)[number];

// Identifiers for ORDER BY come from this map only.
const SORT_COLUMNS: Record<DeviceSortField, string> = {
  createdAt: `d."createdAt"`,
  updatedAt: `d."updatedAt"`,
  name: `d."name"`,
  status: `d."status"`,
  lastSeenAt: `d."lastSeenAt"`,
  statusChangedAt: `d."statusChangedAt"`,
};

export interface DeviceFilter {
  status?: string[];
  labels?: Labels;
  search?: string;
}

export function deviceConditions(organizationId: string, filter: DeviceFilter): Prisma.Sql {
  const conditions = [organizationCondition(organizationId)];
  if (filter.status?.length) conditions.push(Prisma.sql`d."status" IN (${Prisma.join(filter.status)})`);
  if (filter.labels && Object.keys(filter.labels).length) conditions.push(selectorCondition(filter.labels));
  if (filter.search?.trim()) {
    const pattern = likePattern(filter.search.trim());
    conditions.push(Prisma.sql`(d."name" ILIKE ${pattern} OR d."reportedDeviceId" ILIKE ${pattern})`);
  }
  return and(conditions);
}

// The device list and a device by id are the management reads polled most (dashboards,
// scripts over 100,000 devices): they run on the driver (src/db/driver-reads.ts).
export async function listDevices(
  raw: RawDatabase,
  organizationId: string,
  query: DeviceFilter & { sort: DeviceSortField; order: "asc" | "desc"; limit: number; offset: number },
) {
  const where = deviceConditions(organizationId, query);
  const direction = query.order === "asc" ? "ASC" : "DESC";
  // Devices never seen sort last either way; the id breaks ties so pages are stable.
  const orderBy = Prisma.raw(`${SORT_COLUMNS[query.sort]} ${direction} NULLS LAST, d."id" ${direction}`);
  const [rows, counted] = await Promise.all([
    driverRows<DeviceRow>(raw, Prisma.sql`SELECT ${DEVICE_COLUMNS} FROM "Device" d WHERE ${where} ORDER BY ${orderBy} LIMIT ${query.limit} OFFSET ${query.offset}`),
    driverRows<{ total: number }>(raw, Prisma.sql`SELECT count(*)::int AS total FROM "Device" d WHERE ${where}`),
  ]);
  return { rows, total: Number(counted[0]?.total ?? 0) };
}

export async function getDevice(raw: RawDatabase, organizationId: string, id: string): Promise<DeviceRow> {
  const [device] = await driverRows<DeviceRow>(raw, Prisma.sql`
    SELECT ${DEVICE_COLUMNS} FROM "Device" d WHERE d."id" = ${id}::uuid AND ${organizationCondition(organizationId)}`);
  if (!device) throw notFound("Device");
  return device;
}

/**
 * Reads and row-locks a device for the rest of the transaction, so that read-modify-write
 * changes (labels, claim) do not race each other and the activity entry describes exactly
 * what changed.
 */
async function lockDevice(db: DbTx, organizationId: string, id: string): Promise<DeviceRow> {
  const rows = await db.$queryRaw<DeviceRow[]>`
    SELECT ${DEVICE_COLUMNS} FROM "Device" d WHERE d."id" = ${id}::uuid AND ${organizationCondition(organizationId)} FOR UPDATE`;
  if (!rows[0]) throw notFound("Device");
  return rows[0];
}

async function applyLabels(db: DbTx, actor: Actor, device: DeviceRow, after: Labels, why: string) {
  const before = labelsOf(device.labels);
  const diff = labelDiff(before, after);
  if (!diff.changed) return device;
  const updated = await db.device.update({ where: { id: device.id }, data: { labels: after } });
  await recordDeviceEvent(db, actor, {
    organizationId: device.organizationId,
    deviceId: device.id,
    type: "labels_changed",
    message: why,
    data: { before, after, added: diff.added, removed: diff.removed },
  });
  return updated;
}

export async function updateDevice(db: DbTx, actor: Actor, organizationId: string, id: string, changes: { name?: string; labels?: Labels }) {
  let device = await lockDevice(db, organizationId, id);
  if (changes.name !== undefined && changes.name !== device.name) {
    const previous = device.name;
    device = await db.device.update({ where: { id }, data: { name: changes.name } });
    await recordDeviceEvent(db, actor, {
      organizationId,
      deviceId: id,
      type: "updated",
      message: `Renamed from "${previous}" to "${changes.name}"`,
      data: { name: { before: previous, after: changes.name } },
    });
  }
  if (changes.labels !== undefined) device = await applyLabels(db, actor, device, changes.labels, "Labels replaced");
  return device;
}

export async function addLabel(db: DbTx, actor: Actor, organizationId: string, id: string, key: string, value: string) {
  const device = await lockDevice(db, organizationId, id);
  const labels = labelsOf(device.labels);
  if (!(key in labels) && Object.keys(labels).length >= MAX_LABELS_PER_DEVICE) {
    throw badRequest(`A device carries at most ${MAX_LABELS_PER_DEVICE} labels`);
  }
  return applyLabels(db, actor, device, { ...labels, [key]: value }, `Label ${key}=${value} set`);
}

export async function removeLabel(db: DbTx, actor: Actor, organizationId: string, id: string, key: string) {
  const device = await lockDevice(db, organizationId, id);
  const labels = labelsOf(device.labels);
  if (!(key in labels)) throw notFound(`Label "${key}" on this device`);
  const { [key]: _removed, ...rest } = labels;
  return applyLabels(db, actor, device, rest, `Label ${key} removed`);
}

export async function releaseClaim(db: DbTx, actor: Actor, organizationId: string, id: string) {
  const device = await lockDevice(db, organizationId, id);
  if (!device.reportedDeviceId) throw conflict("This device has no reported device id to release");
  if (!device.claimActive) throw conflict(`The claim on reported device id "${device.reportedDeviceId}" is already released`);
  const updated = await db.device.update({ where: { id }, data: { claimActive: false, activeClaim: null } });
  await recordDeviceEvent(db, actor, {
    organizationId,
    deviceId: id,
    type: "claim_released",
    message: `Claim on reported device id "${device.reportedDeviceId}" released: new hardware may enroll under it`,
    data: { reportedDeviceId: device.reportedDeviceId },
  });
  return updated;
}

/** Deletes a device after revoking its certificates (they stay on the CA's revocation list). */
export async function deleteDevice(db: DbTx, organizationId: string, id: string) {
  await lockDevice(db, organizationId, id);
  const revokedCertificates = await revokeCertificatesOfDevices(db, organizationId, [id]);
  await db.device.delete({ where: { id } });
  return { id, deleted: true as const, revokedCertificates };
}

/**
 * The activity log, newest first: the DeviceEvent rows (enrollment, status, labels, claim,
 * renames) merged in SQL with certificate events derived from the device's certificates
 * (issued, renewed, revoked), so that revocations made through the certificate operations
 * appear here without a second write path.
 */
export async function listDeviceActivity(db: DbTx, organizationId: string, id: string, query: { type?: string[]; limit: number; offset: number }) {
  const device = await db.device.findFirst({ where: { id, organizationId }, select: { id: true } });
  if (!device) throw notFound("Device");
  const events = Prisma.sql`
    SELECT e."id", e."deviceId", e."type", e."message", e."data", e."actorType", e."actorId", e."createdAt"
      FROM "DeviceEvent" e
     WHERE e."deviceId" = ${id}::uuid AND e."organizationId" = ${organizationId}::uuid
    UNION ALL
    SELECT c."id", c."deviceId",
           CASE WHEN c."renewedFromId" IS NULL THEN 'certificate_issued' ELSE 'certificate_renewed' END,
           'Certificate ' || c."serialNumber" || ' issued by ' || c."issuer" || ', valid until ' || to_char(c."notAfter", 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
           jsonb_build_object('certificateId', c."id", 'fingerprint', c."fingerprint", 'serialNumber', c."serialNumber",
                              'notAfter', to_char(c."notAfter", 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 'renewedFromId', c."renewedFromId"),
           'system', NULL, c."createdAt"
      FROM "DeviceCertificate" c
     WHERE c."deviceId" = ${id}::uuid AND c."organizationId" = ${organizationId}::uuid
    UNION ALL
    -- a stable id derived from the certificate's (version/variant nibbles set: a valid v4 UUID)
    SELECT overlay(overlay(md5(c."id"::text || ':revoked') placing '4' from 13) placing '8' from 17)::uuid,
           c."deviceId", 'certificate_revoked',
           'Certificate ' || c."serialNumber" || ' revoked: ' || coalesce(c."revokeReason", 'Other'),
           jsonb_build_object('certificateId', c."id", 'fingerprint', c."fingerprint", 'serialNumber', c."serialNumber", 'reason', c."revokeReason"),
           'system', NULL, c."revokedAt"
      FROM "DeviceCertificate" c
     WHERE c."deviceId" = ${id}::uuid AND c."organizationId" = ${organizationId}::uuid AND c."revoked" AND c."revokedAt" IS NOT NULL`;
  const typeFilter = query.type?.length ? Prisma.sql`WHERE a."type" IN (${Prisma.join(query.type)})` : Prisma.empty;
  const [rows, counted] = await Promise.all([
    db.$queryRaw<DeviceEventRow[]>`SELECT * FROM (${events}) a ${typeFilter} ORDER BY a."createdAt" DESC, a."id" DESC LIMIT ${query.limit} OFFSET ${query.offset}`,
    db.$queryRaw<{ total: number }[]>`SELECT count(*)::int AS total FROM (${events}) a ${typeFilter}`,
  ]);
  return { rows, total: Number(counted[0]?.total ?? 0) };
}

