// Devices per label value and status (spec op 14) from the DeviceLabelCount ledger, which
// triggers on Device keep in the same transaction as every device change (migration
// 20261124082533_device_label_counts). Reading it costs the rows of one key (a few hundred
// after compaction) instead of every device: over 100,000 devices that all carry the key,
// 52 ms became a few (docs/benchmarks.md).
import type { RawDatabase } from "../../db/adapters.js";
import { driverRows } from "../../db/driver-reads.js";
import { Prisma } from "../../generated/prisma/client.js";
import type { ScheduleDefinition } from "../../jobs/types.js";

export interface LabelValueCount {
  value: string;
  status: string;
  count: number;
}

/** Devices of the organization carrying `key`, per value and status (zero counts left out). */
export function labelValueCounts(raw: RawDatabase, organizationId: string, key: string): Promise<LabelValueCount[]> {
  return driverRows<LabelValueCount>(raw, Prisma.sql`
    SELECT c."value", c."status", sum(c."devices")::int AS "count" FROM "DeviceLabelCount" c
     WHERE c."organizationId" = ${organizationId}::uuid AND c."key" = ${key}
     GROUP BY 1, 2 HAVING sum(c."devices") <> 0`);
}

// Label keys and values (and the stats' key count) read the ledger too: a device carries a
// key at most once, so the devices carrying a key are the sum over its values.
/** SQL: the (key, value) pairs of an organization still carried by some device, with how many. */
export function labelPairsSql(organizationId: string, key?: string): Prisma.Sql {
  return Prisma.sql`
    SELECT c."key", c."value", sum(c."devices")::int AS "devices" FROM "DeviceLabelCount" c
     WHERE c."organizationId" = ${organizationId}::uuid ${key === undefined ? Prisma.empty : Prisma.sql`AND c."key" = ${key}`}
     GROUP BY 1, 2 HAVING sum(c."devices") <> 0`;
}

/** SQL: how many distinct label keys the organization's devices carry, as `n`. */
export function labelKeyCountSql(organizationId: string): Prisma.Sql {
  return Prisma.sql`SELECT count(DISTINCT p."key")::int AS "n" FROM (${labelPairsSql(organizationId)}) p`;
}

/**
 * Folds the ledger: each (organization, key, value, status) with more than one row becomes
 * one row, and groups that sum to zero or whose organization is gone disappear. Groups that
 * are already one row stay untouched (no rewrite of a large, quiet ledger every minute). One
 * statement: deltas that other transactions write meanwhile are not visible to it, so they
 * are neither deleted nor lost, and are folded the next time.
 */
export async function compactLabelCounts(raw: RawDatabase): Promise<{ deleted: number; inserted: number }> {
  const [row] = await raw.query<{ deleted: number; inserted: number }>(`
    WITH targets AS (
           SELECT c."organizationId", c."key", c."value", c."status", sum(c."devices")::int AS "devices",
                  EXISTS (SELECT 1 FROM "Organization" o WHERE o."id" = c."organizationId") AS "live"
             FROM "DeviceLabelCount" c
            GROUP BY 1, 2, 3, 4
           HAVING count(*) > 1 OR sum(c."devices") = 0
               OR NOT EXISTS (SELECT 1 FROM "Organization" o WHERE o."id" = c."organizationId")),
         deleted AS (
           DELETE FROM "DeviceLabelCount" c USING targets t
            WHERE c."organizationId" = t."organizationId" AND c."key" = t."key" AND c."value" = t."value" AND c."status" = t."status"
           RETURNING c."organizationId", c."key", c."value", c."status", c."devices"),
         sums AS (
           SELECT d."organizationId", d."key", d."value", d."status", sum(d."devices")::int AS "devices"
             FROM deleted d JOIN targets t USING ("organizationId", "key", "value", "status")
            WHERE t."live"
            GROUP BY 1, 2, 3, 4 HAVING sum(d."devices") <> 0),
         inserted AS (
           INSERT INTO "DeviceLabelCount" ("organizationId", "key", "value", "status", "devices")
           SELECT * FROM sums RETURNING 1)
    SELECT (SELECT count(*) FROM deleted)::int AS "deleted", (SELECT count(*) FROM inserted)::int AS "inserted"`);
  return row;
}

export const labelCountsCompaction: ScheduleDefinition = {
  name: "devices.label-counts-compaction",
  everyMs: 60_000,
  jitterMs: 5_000,
  timeoutMs: 120_000,
  run: async ({ services, logger }) => {
    const { deleted, inserted } = await compactLabelCounts(services.database.opened.raw);
    if (deleted > 0) logger.debug({ deleted, inserted }, "label counts folded");
  },
};
