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
  -- The rows whose count changes, joined once; each gives -1 for its old side, +1 for its new.
  WITH changed AS (
    SELECT o."organizationId" AS old_org, o."status" AS old_status, o."labels" AS old_labels,
           c."organizationId" AS new_org, c."status" AS new_status, c."labels" AS new_labels
      FROM old_rows o JOIN new_rows c ON c."id" = o."id"
     WHERE o."status" IS DISTINCT FROM c."status" OR o."labels" IS DISTINCT FROM c."labels" OR o."organizationId" IS DISTINCT FROM c."organizationId")
  INSERT INTO "DeviceLabelCount" ("organizationId", "key", "value", "status", "devices")
  SELECT side.org, l.key, l.value, side.status, sum(side.n)::int
    FROM changed ch
    CROSS JOIN LATERAL (VALUES (ch.old_org, ch.old_status, ch.old_labels, -1), (ch.new_org, ch.new_status, ch.new_labels, 1)) AS side(org, status, labels, n)
    CROSS JOIN LATERAL jsonb_each_text(side.labels) l
   GROUP BY 1, 2, 3, 4
  HAVING sum(side.n) <> 0;
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
