-- CreateTable
CREATE TABLE "RemoteSession" (
    "id" UUID NOT NULL,
    "organizationId" UUID NOT NULL,
    "deviceId" UUID NOT NULL,
    "userId" UUID NOT NULL,
    "apiKeyId" UUID,
    "authSessionId" UUID,
    "kind" TEXT NOT NULL,
    "reason" TEXT,
    "state" TEXT NOT NULL DEFAULT 'pending',
    "command" TEXT[],
    "tty" BOOLEAN NOT NULL DEFAULT false,
    "cols" INTEGER,
    "rows" INTEGER,
    "timeoutSeconds" INTEGER,
    "target" JSONB,
    "path" TEXT,
    "size" BIGINT,
    "mode" INTEGER,
    "sha256" TEXT,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "startedAt" TIMESTAMPTZ(3),
    "endedAt" TIMESTAMPTZ(3),
    "endReason" TEXT,
    "joinDeadline" TIMESTAMPTZ(3) NOT NULL,
    "expiresAt" TIMESTAMPTZ(3) NOT NULL,
    "idleTimeoutSeconds" INTEGER NOT NULL,
    "lastActivityAt" TIMESTAMPTZ(3),
    "bytesToDevice" BIGINT NOT NULL DEFAULT 0,
    "bytesFromDevice" BIGINT NOT NULL DEFAULT 0,
    "exitCode" INTEGER,
    "recorded" BOOLEAN NOT NULL DEFAULT false,

    CONSTRAINT "RemoteSession_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "RemoteConnection" (
    "id" UUID NOT NULL,
    "sessionId" UUID NOT NULL,
    "deviceId" UUID NOT NULL,
    "ticketHash" TEXT NOT NULL,
    "ticketExpiresAt" TIMESTAMPTZ(3) NOT NULL,
    "userJoinedAt" TIMESTAMPTZ(3),
    "deviceJoinedAt" TIMESTAMPTZ(3),
    "deviceCertificateId" UUID,
    "offeredAt" TIMESTAMPTZ(3),
    "relayNode" TEXT,
    "endedAt" TIMESTAMPTZ(3),
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "RemoteConnection_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "RemoteSessionRecording" (
    "sessionId" UUID NOT NULL,
    "data" BYTEA NOT NULL,
    "bytes" INTEGER NOT NULL DEFAULT 0,
    "truncated" BOOLEAN NOT NULL DEFAULT false,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "RemoteSessionRecording_pkey" PRIMARY KEY ("sessionId")
);

-- CreateIndex
CREATE INDEX "RemoteSession_organizationId_createdAt_idx" ON "RemoteSession"("organizationId", "createdAt");

-- CreateIndex
CREATE INDEX "RemoteSession_organizationId_deviceId_createdAt_idx" ON "RemoteSession"("organizationId", "deviceId", "createdAt");

-- CreateIndex
CREATE INDEX "RemoteSession_organizationId_userId_createdAt_idx" ON "RemoteSession"("organizationId", "userId", "createdAt");

-- CreateIndex
CREATE INDEX "RemoteSession_organizationId_state_createdAt_idx" ON "RemoteSession"("organizationId", "state", "createdAt");

-- CreateIndex
CREATE INDEX "RemoteSession_organizationId_kind_createdAt_idx" ON "RemoteSession"("organizationId", "kind", "createdAt");

-- CreateIndex
CREATE INDEX "RemoteSession_deviceId_state_idx" ON "RemoteSession"("deviceId", "state");

-- CreateIndex
CREATE INDEX "RemoteSession_userId_state_idx" ON "RemoteSession"("userId", "state");

-- CreateIndex
CREATE INDEX "RemoteSession_authSessionId_state_idx" ON "RemoteSession"("authSessionId", "state");

-- CreateIndex
CREATE INDEX "RemoteSession_state_joinDeadline_idx" ON "RemoteSession"("state", "joinDeadline");

-- CreateIndex
CREATE INDEX "RemoteSession_state_expiresAt_idx" ON "RemoteSession"("state", "expiresAt");

-- CreateIndex
CREATE UNIQUE INDEX "RemoteConnection_ticketHash_key" ON "RemoteConnection"("ticketHash");

-- CreateIndex
CREATE INDEX "RemoteConnection_sessionId_idx" ON "RemoteConnection"("sessionId");

-- CreateIndex
CREATE INDEX "RemoteConnection_deviceId_deviceJoinedAt_endedAt_idx" ON "RemoteConnection"("deviceId", "deviceJoinedAt", "endedAt");

-- AddForeignKey
ALTER TABLE "RemoteConnection" ADD CONSTRAINT "RemoteConnection_sessionId_fkey" FOREIGN KEY ("sessionId") REFERENCES "RemoteSession"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "RemoteSessionRecording" ADD CONSTRAINT "RemoteSessionRecording_sessionId_fkey" FOREIGN KEY ("sessionId") REFERENCES "RemoteSession"("id") ON DELETE CASCADE ON UPDATE CASCADE;
