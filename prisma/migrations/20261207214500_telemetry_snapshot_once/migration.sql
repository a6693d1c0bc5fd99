-- A device's telemetry snapshot is stored once per timestamp. An agent sends a batch again when
-- its answer was lost on the way (a cut connection, a proxy's 502): until now each resend was
-- stored again, counted twice in charts and alert windows. Ingest now skips a snapshot already
-- stored (ON CONFLICT DO NOTHING on this index). Duplicates stored before are removed first,
-- keeping the newest row of each (the one DeviceTelemetryLatest names); the rollups keep what
-- they summed.
DELETE FROM "TelemetrySnapshot" a
 USING "TelemetrySnapshot" b
 WHERE a."deviceId" = b."deviceId" AND a."timestamp" = b."timestamp" AND a."id" < b."id";

-- DropIndex
DROP INDEX "TelemetrySnapshot_deviceId_timestamp_idx";

-- CreateIndex
CREATE UNIQUE INDEX "TelemetrySnapshot_deviceId_timestamp_key" ON "TelemetrySnapshot"("deviceId", "timestamp");
