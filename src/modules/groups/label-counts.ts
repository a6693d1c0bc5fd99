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

/**
 * Folds the ledger: every delta visible now becomes one row per (organization, key, value,
 * status), zero sums and organizations that no longer exist disappear. One statement: deltas
 * written meanwhile by other transactions are not visible to it, so they are neither deleted
 * nor lost, and are folded next time.
 */
export async function compactLabelCounts(raw: RawDatabase): Promise<{ before: number; after: number }> {
  const [row] = await raw.query<{ before: number; after: number }>(`
    WITH folded AS (DELETE FROM "DeviceLabelCount" RETURNING *),
         sums AS (
           SELECT f."organizationId", f."key", f."value", f."status", sum(f."devices")::int AS "devices"
             FROM folded f WHERE EXISTS (SELECT 1 FROM "Organization" o WHERE o."id" = f."organizationId")
            GROUP BY 1, 2, 3, 4 HAVING sum(f."devices") <> 0),
         kept AS (
           INSERT INTO "DeviceLabelCount" ("organizationId", "key", "value", "status", "devices")
           SELECT * FROM sums RETURNING 1)
    SELECT (SELECT count(*) FROM folded)::int AS "before", (SELECT count(*) FROM kept)::int AS "after"`);
  return row;
}

export const labelCountsCompaction: ScheduleDefinition = {
  name: "devices.label-counts-compaction",
  everyMs: 60_000,
  jitterMs: 5_000,
  timeoutMs: 120_000,
  run: async ({ services, logger }) => {
    const { before, after } = await compactLabelCounts(services.database.opened.raw);
    if (before !== after) logger.debug({ before, after }, "label counts folded");
  },
};
