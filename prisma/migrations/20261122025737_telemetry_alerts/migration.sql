-- CreateTable
CREATE TABLE "AlertRule" (
    "id" UUID NOT NULL,
    "organizationId" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "description" TEXT,
    "conditionType" TEXT NOT NULL,
    "condition" JSONB NOT NULL,
    "labelSelector" JSONB NOT NULL DEFAULT '{}',
    "severity" TEXT NOT NULL,
    "cooldownSeconds" INTEGER NOT NULL,
    "enabled" BOOLEAN NOT NULL DEFAULT true,
    "lastEvaluatedAt" TIMESTAMPTZ(3),
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "AlertRule_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "AlertRuleTarget" (
    "ruleId" UUID NOT NULL,
    "targetId" UUID NOT NULL,

    CONSTRAINT "AlertRuleTarget_pkey" PRIMARY KEY ("ruleId","targetId")
);

-- CreateTable
CREATE TABLE "AlertState" (
    "ruleId" UUID NOT NULL,
    "deviceId" UUID NOT NULL,
    "organizationId" UUID NOT NULL,
    "state" TEXT NOT NULL,
    "value" DOUBLE PRECISION,
    "firingSince" TIMESTAMPTZ(3) NOT NULL,
    "resolvedAt" TIMESTAMPTZ(3),
    "lastNotifiedAt" TIMESTAMPTZ(3),
    "updatedAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "AlertState_pkey" PRIMARY KEY ("ruleId","deviceId")
);

-- CreateTable
CREATE TABLE "NotificationTarget" (
    "id" UUID NOT NULL,
    "organizationId" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "type" TEXT NOT NULL,
    "url" TEXT,
    "secretEncrypted" TEXT,
    "recipients" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "enabled" BOOLEAN NOT NULL DEFAULT true,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "NotificationTarget_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "NotificationDelivery" (
    "id" UUID NOT NULL,
    "organizationId" UUID NOT NULL,
    "ruleId" UUID,
    "targetId" UUID,
    "targetName" TEXT NOT NULL,
    "targetType" TEXT NOT NULL,
    "deviceId" UUID,
    "event" TEXT NOT NULL,
    "payload" JSONB NOT NULL,
    "status" TEXT NOT NULL DEFAULT 'pending',
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "maxAttempts" INTEGER NOT NULL,
    "nextAttemptAt" TIMESTAMPTZ(3) NOT NULL,
    "lockedUntil" TIMESTAMPTZ(3),
    "lastStatusCode" INTEGER,
    "lastError" TEXT,
    "deliveredAt" TIMESTAMPTZ(3),
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "NotificationDelivery_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "NotificationAttempt" (
    "id" UUID NOT NULL,
    "deliveryId" UUID NOT NULL,
    "attempt" INTEGER NOT NULL,
    "startedAt" TIMESTAMPTZ(3) NOT NULL,
    "durationMs" INTEGER NOT NULL,
    "statusCode" INTEGER,
    "error" TEXT,
    "success" BOOLEAN NOT NULL,

    CONSTRAINT "NotificationAttempt_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "TelemetrySnapshot" (
    "id" BIGSERIAL NOT NULL,
    "deviceId" UUID NOT NULL,
    "timestamp" TIMESTAMPTZ(3) NOT NULL,
    "cpuUsagePercent" DOUBLE PRECISION,
    "memoryUsedBytes" BIGINT,
    "memoryTotalBytes" BIGINT,
    "diskUsedBytes" BIGINT,
    "diskTotalBytes" BIGINT,
    "uptimeSeconds" BIGINT,
    "restartCount" INTEGER,
    "containersRunning" INTEGER,
    "containersFailed" INTEGER,
    "errorCount" INTEGER,

    CONSTRAINT "TelemetrySnapshot_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "DeviceTelemetryLatest" (
    "deviceId" UUID NOT NULL,
    "organizationId" UUID NOT NULL,
    "snapshotId" BIGINT NOT NULL,
    "timestamp" TIMESTAMPTZ(3) NOT NULL,
    "cpuUsagePercent" DOUBLE PRECISION,
    "memoryUsedBytes" BIGINT,
    "memoryTotalBytes" BIGINT,
    "diskUsedBytes" BIGINT,
    "diskTotalBytes" BIGINT,
    "uptimeSeconds" BIGINT,
    "restartCount" INTEGER,
    "containersRunning" INTEGER,
    "containersFailed" INTEGER,
    "errorCount" INTEGER,

    CONSTRAINT "DeviceTelemetryLatest_pkey" PRIMARY KEY ("deviceId")
);

-- CreateTable
CREATE TABLE "DeviceLog" (
    "id" BIGSERIAL NOT NULL,
    "deviceId" UUID NOT NULL,
    "timestamp" TIMESTAMPTZ(3) NOT NULL,
    "level" TEXT NOT NULL,
    "source" TEXT NOT NULL,
    "message" TEXT NOT NULL,

    CONSTRAINT "DeviceLog_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "DeviceLogSource" (
    "deviceId" UUID NOT NULL,
    "source" TEXT NOT NULL,
    "organizationId" UUID NOT NULL,
    "lastLogAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "DeviceLogSource_pkey" PRIMARY KEY ("deviceId","source")
);

-- CreateTable
CREATE TABLE "RealtimeTicket" (
    "id" UUID NOT NULL,
    "tokenHash" TEXT NOT NULL,
    "organizationId" UUID NOT NULL,
    "userId" UUID NOT NULL,
    "apiKeyId" UUID,
    "channels" TEXT[],
    "expiresAt" TIMESTAMPTZ(3) NOT NULL,
    "usedAt" TIMESTAMPTZ(3),
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "RealtimeTicket_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "AlertRule_organizationId_createdAt_idx" ON "AlertRule"("organizationId", "createdAt");

-- CreateIndex
CREATE INDEX "AlertRule_enabled_idx" ON "AlertRule"("enabled");

-- CreateIndex
CREATE UNIQUE INDEX "AlertRule_organizationId_name_key" ON "AlertRule"("organizationId", "name");

-- CreateIndex
CREATE INDEX "AlertRuleTarget_targetId_idx" ON "AlertRuleTarget"("targetId");

-- CreateIndex
CREATE INDEX "AlertState_organizationId_state_idx" ON "AlertState"("organizationId", "state");

-- CreateIndex
CREATE INDEX "NotificationTarget_organizationId_createdAt_idx" ON "NotificationTarget"("organizationId", "createdAt");

-- CreateIndex
CREATE UNIQUE INDEX "NotificationTarget_organizationId_name_key" ON "NotificationTarget"("organizationId", "name");

-- CreateIndex
CREATE INDEX "NotificationDelivery_status_nextAttemptAt_idx" ON "NotificationDelivery"("status", "nextAttemptAt");

-- CreateIndex
CREATE INDEX "NotificationDelivery_ruleId_createdAt_idx" ON "NotificationDelivery"("ruleId", "createdAt");

-- CreateIndex
CREATE INDEX "NotificationDelivery_organizationId_createdAt_idx" ON "NotificationDelivery"("organizationId", "createdAt");

-- CreateIndex
CREATE INDEX "NotificationDelivery_targetId_idx" ON "NotificationDelivery"("targetId");

-- CreateIndex
CREATE UNIQUE INDEX "NotificationAttempt_deliveryId_attempt_key" ON "NotificationAttempt"("deliveryId", "attempt");

-- CreateIndex
CREATE INDEX "TelemetrySnapshot_deviceId_timestamp_idx" ON "TelemetrySnapshot"("deviceId", "timestamp");

-- CreateIndex
CREATE INDEX "TelemetrySnapshot_timestamp_idx" ON "TelemetrySnapshot" USING BRIN ("timestamp");

-- CreateIndex
CREATE INDEX "DeviceTelemetryLatest_organizationId_idx" ON "DeviceTelemetryLatest"("organizationId");

-- CreateIndex
CREATE INDEX "DeviceLog_deviceId_timestamp_idx" ON "DeviceLog"("deviceId", "timestamp");

-- CreateIndex
CREATE INDEX "DeviceLog_deviceId_id_idx" ON "DeviceLog"("deviceId", "id");

-- CreateIndex
CREATE INDEX "DeviceLog_timestamp_idx" ON "DeviceLog" USING BRIN ("timestamp");

-- CreateIndex
CREATE INDEX "DeviceLogSource_organizationId_idx" ON "DeviceLogSource"("organizationId");

-- CreateIndex
CREATE UNIQUE INDEX "RealtimeTicket_tokenHash_key" ON "RealtimeTicket"("tokenHash");

-- CreateIndex
CREATE INDEX "RealtimeTicket_expiresAt_idx" ON "RealtimeTicket"("expiresAt");

-- AddForeignKey
ALTER TABLE "AlertRuleTarget" ADD CONSTRAINT "AlertRuleTarget_ruleId_fkey" FOREIGN KEY ("ruleId") REFERENCES "AlertRule"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "AlertRuleTarget" ADD CONSTRAINT "AlertRuleTarget_targetId_fkey" FOREIGN KEY ("targetId") REFERENCES "NotificationTarget"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "AlertState" ADD CONSTRAINT "AlertState_ruleId_fkey" FOREIGN KEY ("ruleId") REFERENCES "AlertRule"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "NotificationDelivery" ADD CONSTRAINT "NotificationDelivery_ruleId_fkey" FOREIGN KEY ("ruleId") REFERENCES "AlertRule"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "NotificationDelivery" ADD CONSTRAINT "NotificationDelivery_targetId_fkey" FOREIGN KEY ("targetId") REFERENCES "NotificationTarget"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "NotificationAttempt" ADD CONSTRAINT "NotificationAttempt_deliveryId_fkey" FOREIGN KEY ("deliveryId") REFERENCES "NotificationDelivery"("id") ON DELETE CASCADE ON UPDATE CASCADE;
