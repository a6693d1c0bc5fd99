// Group statistics and bulk operations, each computed by one or a few set-based statements.
// Selectors use `labels @> {...}` and key lookups `labels ? key`, both served by the GIN
// (jsonb_ops) index on Device.labels; counts are grouped in SQL, never per device. Op 14,
// label keys and label values read the DeviceLabelCount ledger instead of the devices
// (./label-counts.ts).
import type { DbTx } from "../../db/client.js";
import type { RawDatabase } from "../../db/adapters.js";
import { UNKNOWN_ARCHITECTURE } from "./architectures.js";
import { labelKeyCountSql, labelPairsSql, labelValueCounts } from "./label-counts.js";
import { Prisma } from "../../generated/prisma/client.js";
import { byStatusOf, emptyByStatus, type ByStatus } from "../devices/schemas.js";
import type { Actor } from "../devices/activity.js";
import { MAX_LABELS_PER_DEVICE, type Labels } from "../devices/labels.js";
import { and, architectureEligible, deviceOffline, raucEligible, NORMALIZED_ARCH, organizationCondition, selectorCondition, UTC_NOW } from "../devices/sql.js";
import { revokeCertificatesOfDevices } from "../devices/certificate-bridge.js";

type StatusCount = { status: string; count: number };

/**
 * Spec op 12 (and the query-parameter form): devices matching every pair, by status, and (an
 * addition to the spec's fields) by architecture as manifests name it, so a deployment form
 * can say how many of them a profile would skip.
 */
export async function statsBySelector(db: DbTx, organizationId: string, selector: Labels) {
  const rows = await db.$queryRaw<(StatusCount & { arch: string | null })[]>`
    SELECT d."status", ${NORMALIZED_ARCH} AS "arch", count(*)::int AS "count" FROM "Device" d
     WHERE ${organizationCondition(organizationId)} AND ${selectorCondition(selector)}
     GROUP BY 1, 2`;
  const byArchitecture: Record<string, number> = {};
  for (const row of rows) {
    const arch = row.arch ?? UNKNOWN_ARCHITECTURE;
    byArchitecture[arch] = (byArchitecture[arch] ?? 0) + Number(row.count);
  }
  return { total: rows.reduce((sum, r) => sum + Number(r.count), 0), byStatus: byStatusOf(rows), byArchitecture };
}

/**
 * How many devices a target matches and how many of them a profile for `architectures` can run
 * on, by the rule deployments apply when they freeze their targets (architectureEligible), and how
 * many of those are offline now (deviceOffline, the rule a staged rollout draws its canary by). One
 * statement, grouped by architecture.
 */
export async function eligibility(db: DbTx, organizationId: string, target: BulkTarget, architectures: readonly string[] | undefined, systemImage = false) {
  const rows = await db.$queryRaw<{ arch: string | null; eligible: boolean; rauc: boolean; count: number; offline: number }[]>`
    SELECT ${NORMALIZED_ARCH} AS "arch", ${architectureEligible(architectures)} AS "eligible", ${raucEligible(systemImage)} AS "rauc", count(*)::int AS "count",
           count(*) FILTER (WHERE ${deviceOffline()})::int AS "offline"
      FROM "Device" d
     WHERE ${targetCondition(organizationId, target)}
     GROUP BY 1, 2, 3`;
  const byArchitecture: Record<string, number> = {};
  const skippedByArchitecture: Record<string, number> = {};
  let eligible = 0;
  let offline = 0;
  let skippedWithoutRauc = 0;
  for (const row of rows) {
    const arch = row.arch ?? UNKNOWN_ARCHITECTURE;
    const n = Number(row.count);
    byArchitecture[arch] = (byArchitecture[arch] ?? 0) + n;
    if (row.eligible && row.rauc) {
      eligible += n;
      offline += Number(row.offline);
    } else if (row.eligible) skippedWithoutRauc += n;
    else skippedByArchitecture[arch] = (skippedByArchitecture[arch] ?? 0) + n;
  }
  const matched = Object.values(byArchitecture).reduce((sum, n) => sum + n, 0);
  return { matched, eligible, skipped: matched - eligible, offline, byArchitecture, skippedByArchitecture, skippedWithoutRauc };
}

/**
 * Spec op 14: one group per value of the key, largest first; an unknown key gives no groups.
 * Counted from the DeviceLabelCount ledger (./label-counts.ts), not from every device.
 */
export async function groupsByLabel(raw: RawDatabase, organizationId: string, key: string) {
  const rows = await labelValueCounts(raw, organizationId, key);
  const groups = new Map<string, { value: string; count: number; byStatus: ByStatus }>();
  let total = 0;
  for (const row of rows) {
    let group = groups.get(row.value);
    if (!group) groups.set(row.value, (group = { value: row.value, count: 0, byStatus: emptyByStatus() }));
    group.count += row.count;
    total += row.count;
    if (row.status in group.byStatus) group.byStatus[row.status as keyof ByStatus] += row.count;
  }
  const sorted = [...groups.values()].sort((a, b) => b.count - a.count || a.value.localeCompare(b.value));
  return { labelKey: key, groups: sorted, total };
}

export async function fleetStats(db: DbTx, organizationId: string) {
  const [rows, keys] = await Promise.all([
    db.$queryRaw<(StatusCount & { unlabeled: number })[]>`
      SELECT d."status", count(*)::int AS "count", (count(*) FILTER (WHERE d."labels" = '{}'::jsonb))::int AS "unlabeled"
        FROM "Device" d WHERE ${organizationCondition(organizationId)} GROUP BY d."status"`,
    db.$queryRaw<{ n: number }[]>(labelKeyCountSql(organizationId)),
  ]);
  return {
    total: rows.reduce((sum, r) => sum + Number(r.count), 0),
    byStatus: byStatusOf(rows),
    unlabeled: rows.reduce((sum, r) => sum + Number(r.unlabeled), 0),
    labelKeys: Number(keys[0]?.n ?? 0),
  };
}

export async function labelKeys(db: DbTx, organizationId: string, page: { limit: number; offset: number }) {
  const rows = await db.$queryRaw<{ key: string; deviceCount: number; valueCount: number; total: number }[]>`
    SELECT p."key", sum(p."devices")::int AS "deviceCount", count(*)::int AS "valueCount", (count(*) OVER ())::int AS "total"
      FROM (${labelPairsSql(organizationId)}) p
     GROUP BY p."key" ORDER BY p."key" LIMIT ${page.limit} OFFSET ${page.offset}`;
  // Past the last page the window count is not available; count separately then.
  const total = rows[0]
    ? Number(rows[0].total)
    : Number((await db.$queryRaw<{ n: number }[]>(labelKeyCountSql(organizationId)))[0]?.n ?? 0);
  return { items: rows.map(({ key, deviceCount, valueCount }) => ({ key, deviceCount, valueCount })), total };
}

export async function labelValues(db: DbTx, organizationId: string, key: string, page: { limit: number; offset: number }) {
  const pairs = labelPairsSql(organizationId, key);
  const [rows, summary] = await Promise.all([
    db.$queryRaw<{ value: string; count: number }[]>`
      SELECT p."value", p."devices" AS "count" FROM (${pairs}) p ORDER BY 2 DESC, 1 ASC LIMIT ${page.limit} OFFSET ${page.offset}`,
    db.$queryRaw<{ values: number; devices: number }[]>`
      SELECT count(*)::int AS "values", coalesce(sum(p."devices"), 0)::int AS "devices" FROM (${pairs}) p`,
  ]);
  const total = Number(summary[0]?.values ?? 0);
  return {
    key,
    items: rows.map((r) => ({ value: r.value, count: Number(r.count) })),
    total,
    hasMore: page.offset + rows.length < total,
    deviceCount: Number(summary[0]?.devices ?? 0),
  };
}

export interface BulkTarget {
  labelSelector?: Labels;
  deviceIds?: string[];
}

/** Devices of the organization picked by a selector or an id list (bulk operations, deployments). */
export function targetCondition(organizationId: string, target: BulkTarget): Prisma.Sql {
  const conditions = [organizationCondition(organizationId)];
  if (target.labelSelector) conditions.push(selectorCondition(target.labelSelector));
  // Ids travel as one JSON parameter: the same text on every driver, however many there are.
  if (target.deviceIds) conditions.push(Prisma.sql`d."id" IN (SELECT jsonb_array_elements_text(${JSON.stringify(target.deviceIds)}::jsonb)::uuid)`);
  return and(conditions);
}

/**
 * Adds/overwrites `set` and removes `remove` on every targeted device in one statement,
 * writing one activity entry per device whose labels changed, in the same statement.
 * Devices that would end up with more than the label limit are left unchanged (`skipped`).
 */
export async function bulkUpdateLabels(db: DbTx, actor: Actor, organizationId: string, target: BulkTarget, set: Labels, remove: string[]) {
  const setJson = JSON.stringify(set);
  const removeJson = JSON.stringify(remove);
  const rows = await db.$queryRaw<{ matched: number; updated: number; skipped: number }[]>`
    WITH target AS (
      SELECT d."id", d."organizationId", d."labels" AS "before",
             (d."labels" - ARRAY(SELECT jsonb_array_elements_text(${removeJson}::jsonb))) || ${setJson}::jsonb AS "after"
        FROM "Device" d
       WHERE ${targetCondition(organizationId, target)}
       FOR UPDATE OF d
    ), fits AS (
      SELECT t.* FROM target t WHERE (SELECT count(*) FROM jsonb_object_keys(t."after")) <= ${MAX_LABELS_PER_DEVICE}
    ), changed AS (
      UPDATE "Device" d SET "labels" = f."after", "updatedAt" = ${UTC_NOW}
        FROM fits f
       WHERE d."id" = f."id" AND f."after" <> f."before"
      RETURNING d."id", f."organizationId", f."before", f."after"
    ), logged AS (
      INSERT INTO "DeviceEvent" ("organizationId", "deviceId", "type", "message", "data", "actorType", "actorId", "createdAt")
      SELECT c."organizationId", c."id", 'labels_changed', 'Labels changed by a bulk update',
             jsonb_build_object('before', c."before", 'after', c."after"), ${actor.type}, ${actor.id}, ${UTC_NOW}
        FROM changed c
      RETURNING 1
    )
    SELECT (SELECT count(*) FROM target)::int AS "matched",
           (SELECT count(*) FROM changed)::int AS "updated",
           ((SELECT count(*) FROM target) - (SELECT count(*) FROM fits))::int AS "skipped"`;
  const row = rows[0];
  return { matched: Number(row?.matched ?? 0), updated: Number(row?.updated ?? 0), skipped: Number(row?.skipped ?? 0) };
}

/** Deletes every targeted device after revoking its certificates: three statements, whatever the count. */
export async function bulkDeleteDevices(db: DbTx, organizationId: string, target: BulkTarget) {
  const doomed = await db.$queryRaw<{ id: string }[]>`
    SELECT d."id" FROM "Device" d WHERE ${targetCondition(organizationId, target)} FOR UPDATE OF d`;
  const ids = doomed.map((r) => r.id);
  if (ids.length === 0) return { deleted: 0, revokedCertificates: 0, ids };
  const revokedCertificates = await revokeCertificatesOfDevices(db, organizationId, ids);
  const deleted = await db.$executeRaw`
    DELETE FROM "Device" d WHERE ${organizationCondition(organizationId)} AND d."id" IN (SELECT jsonb_array_elements_text(${JSON.stringify(ids)}::jsonb)::uuid)`;
  return { deleted, revokedCertificates, ids };
}
