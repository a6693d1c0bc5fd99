-- CreateTable
CREATE TABLE "DeviceLabelCount" (
    "id" BIGSERIAL NOT NULL,
    "organizationId" UUID NOT NULL,
    "key" TEXT NOT NULL,
    "value" TEXT NOT NULL,
    "status" TEXT NOT NULL,
    "devices" INTEGER NOT NULL,

    CONSTRAINT "DeviceLabelCount_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "DeviceLabelCount_organizationId_key_idx" ON "DeviceLabelCount"("organizationId", "key");

-- Device counts per label value and status, kept as signed deltas by statement-level
-- triggers: one INSERT per statement on "Device", whatever its size, rows grouped first; an
-- append-only table, so concurrent writers never wait on a shared counter row (and the
-- heartbeat's group commit cannot deadlock on one). Updates that change neither status, labels
-- nor organization (the heartbeat's lastSeenAt) add nothing. The schedule
-- devices.label-counts-compaction folds the deltas (src/modules/groups/label-counts.ts).
CREATE FUNCTION "device_label_counts_insert"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "DeviceLabelCount" ("organizationId", "key", "value", "status", "devices")
  SELECT n."organizationId", l.key, l.value, n."status", count(*)::int
    FROM new_rows n CROSS JOIN LATERAL jsonb_each_text(n."labels") l
   GROUP BY 1, 2, 3, 4;
  RETURN NULL;
END $$;

CREATE FUNCTION "device_label_counts_delete"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "DeviceLabelCount" ("organizationId", "key", "value", "status", "devices")
  SELECT o."organizationId", l.key, l.value, o."status", -count(*)::int
    FROM old_rows o CROSS JOIN LATERAL jsonb_each_text(o."labels") l
   GROUP BY 1, 2, 3, 4;
  RETURN NULL;
END $$;

CREATE FUNCTION "device_label_counts_update"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "DeviceLabelCount" ("organizationId", "key", "value", "status", "devices")
  SELECT d.org, d.key, d.value, d.status, sum(d.n)::int
    FROM (
      SELECT o."organizationId" AS org, l.key, l.value, o."status" AS status, -1 AS n
        FROM old_rows o JOIN new_rows c ON c."id" = o."id" CROSS JOIN LATERAL jsonb_each_text(o."labels") l
       WHERE o."status" IS DISTINCT FROM c."status" OR o."labels" IS DISTINCT FROM c."labels" OR o."organizationId" IS DISTINCT FROM c."organizationId"
      UNION ALL
      SELECT c."organizationId", l.key, l.value, c."status", 1
        FROM old_rows o JOIN new_rows c ON c."id" = o."id" CROSS JOIN LATERAL jsonb_each_text(c."labels") l
       WHERE o."status" IS DISTINCT FROM c."status" OR o."labels" IS DISTINCT FROM c."labels" OR o."organizationId" IS DISTINCT FROM c."organizationId"
    ) d
   GROUP BY 1, 2, 3, 4
  HAVING sum(d.n) <> 0;
  RETURN NULL;
END $$;

CREATE TRIGGER "Device_label_counts_insert" AFTER INSERT ON "Device"
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION "device_label_counts_insert"();
CREATE TRIGGER "Device_label_counts_delete" AFTER DELETE ON "Device"
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION "device_label_counts_delete"();
CREATE TRIGGER "Device_label_counts_update" AFTER UPDATE ON "Device"
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION "device_label_counts_update"();

-- The devices that exist already.
INSERT INTO "DeviceLabelCount" ("organizationId", "key", "value", "status", "devices")
SELECT d."organizationId", l.key, l.value, d."status", count(*)::int
  FROM "Device" d CROSS JOIN LATERAL jsonb_each_text(d."labels") l
 GROUP BY 1, 2, 3, 4;
