-- The whole fleet's telemetry series, precomputed (docs/telemetry.md, "Fleet-wide telemetry
-- series"): per organization, interval ('5m', '1h', '1d') and bucket, the row that
-- GET /api/v1/fleet/telemetry computes from the per-device rollups. The ingest statement marks
-- the buckets it touches in TelemetryFleetDirty; the telemetry.fleet-rollups job recomputes
-- them. Not partitioned: one row per organization, interval and bucket.
--
-- Upgrade: every bucket the existing rollups hold is marked dirty here, so the job fills the
-- table on its first runs.

-- CreateTable
CREATE TABLE "TelemetryFleetRollup" (
    "organizationId" UUID NOT NULL,
    "interval" TEXT NOT NULL,
    "bucket" TIMESTAMPTZ(3) NOT NULL,
    "devicesReporting" INTEGER NOT NULL,
    "cpuAvg" DOUBLE PRECISION,
    "cpuP95" DOUBLE PRECISION,
    "containersFailed" INTEGER NOT NULL,
    "devicesWithFailedContainers" INTEGER NOT NULL,
    "computedAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "TelemetryFleetRollup_pkey" PRIMARY KEY ("organizationId","interval","bucket")
);

-- CreateTable
CREATE TABLE "TelemetryFleetDirty" (
    "organizationId" UUID NOT NULL,
    "interval" TEXT NOT NULL,
    "bucket" TIMESTAMPTZ(3) NOT NULL,
    "claimed" BOOLEAN NOT NULL DEFAULT false,

    CONSTRAINT "TelemetryFleetDirty_pkey" PRIMARY KEY ("organizationId","interval","bucket","claimed")
);

-- CreateIndex
CREATE INDEX "TelemetryFleetRollup_bucket_idx" ON "TelemetryFleetRollup"("bucket");

-- CreateIndex
CREATE INDEX "TelemetryFleetDirty_bucket_idx" ON "TelemetryFleetDirty"("bucket");

-- Existing rollups: mark their buckets (5-minute ones from the 5-minute rollups; hours and days from the hourly ones).
INSERT INTO "TelemetryFleetDirty" ("organizationId", "interval", "bucket")
SELECT DISTINCT "organizationId", '5m', "bucket" FROM "TelemetryRollup5m"
UNION
SELECT DISTINCT "organizationId", '1h', "bucket" FROM "TelemetryRollup1h"
UNION
SELECT DISTINCT "organizationId", '1d', date_bin('1 day', "bucket", TIMESTAMPTZ '1970-01-01 00:00:00+00') FROM "TelemetryRollup1h";
