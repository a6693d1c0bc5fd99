-- CreateTable
CREATE TABLE "Application" (
    "id" UUID NOT NULL,
    "organizationId" UUID NOT NULL,
    "appKey" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "description" TEXT,
    "category" TEXT,
    "tags" TEXT[],
    "vendorName" TEXT,
    "vendorSite" TEXT,
    "latestVersionId" UUID,
    "latestVersion" TEXT,
    "versionCount" INTEGER NOT NULL DEFAULT 0,
    "sourceType" TEXT NOT NULL,
    "sourceRegistryId" UUID,
    "sourcePath" TEXT,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "Application_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "ApplicationVersion" (
    "id" UUID NOT NULL,
    "organizationId" UUID NOT NULL,
    "applicationId" UUID NOT NULL,
    "version" TEXT NOT NULL,
    "apiVersion" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "description" TEXT,
    "category" TEXT,
    "tags" TEXT[],
    "vendorName" TEXT,
    "vendorSite" TEXT,
    "profiles" JSONB NOT NULL,
    "parameters" JSONB NOT NULL DEFAULT '{}',
    "warnings" TEXT[],
    "manifestDigest" TEXT NOT NULL,
    "sourceType" TEXT NOT NULL,
    "sourceRegistryId" UUID,
    "sourcePath" TEXT NOT NULL,
    "sourceRevision" TEXT,
    "iconData" BYTEA,
    "iconContentType" TEXT,
    "iconSha256" TEXT,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "ApplicationVersion_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Job" (
    "id" UUID NOT NULL,
    "type" TEXT NOT NULL,
    "payload" JSONB NOT NULL DEFAULT '{}',
    "uniqueKey" TEXT,
    "activeKey" TEXT,
    "state" TEXT NOT NULL DEFAULT 'pending',
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "maxAttempts" INTEGER NOT NULL DEFAULT 5,
    "runAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "lockedBy" TEXT,
    "lockedUntil" TIMESTAMP(3),
    "lastError" TEXT,
    "finishedAt" TIMESTAMP(3),
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "Job_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "GitRegistry" (
    "id" UUID NOT NULL,
    "organizationId" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "url" TEXT NOT NULL,
    "branch" TEXT NOT NULL DEFAULT 'main',
    "path" TEXT NOT NULL DEFAULT '/',
    "authType" TEXT NOT NULL DEFAULT 'NONE',
    "credentialSealed" TEXT,
    "syncIntervalMinutes" INTEGER NOT NULL DEFAULT 60,
    "enabled" BOOLEAN NOT NULL DEFAULT true,
    "lastSyncAt" TIMESTAMP(3),
    "lastSyncError" TEXT,
    "lastSyncCommit" TEXT,
    "lastSyncAttemptAt" TIMESTAMP(3),
    "syncLeaseId" UUID,
    "syncLeaseUntil" TIMESTAMP(3),
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "GitRegistry_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "Application_organizationId_createdAt_idx" ON "Application"("organizationId", "createdAt");

-- CreateIndex
CREATE INDEX "Application_organizationId_category_idx" ON "Application"("organizationId", "category");

-- CreateIndex
CREATE INDEX "Application_organizationId_vendorName_idx" ON "Application"("organizationId", "vendorName");

-- CreateIndex
CREATE INDEX "Application_organizationId_sourceRegistryId_idx" ON "Application"("organizationId", "sourceRegistryId");

-- CreateIndex
CREATE UNIQUE INDEX "Application_organizationId_appKey_key" ON "Application"("organizationId", "appKey");

-- CreateIndex
CREATE INDEX "ApplicationVersion_organizationId_createdAt_idx" ON "ApplicationVersion"("organizationId", "createdAt");

-- CreateIndex
CREATE UNIQUE INDEX "ApplicationVersion_applicationId_version_key" ON "ApplicationVersion"("applicationId", "version");

-- CreateIndex
CREATE UNIQUE INDEX "Job_activeKey_key" ON "Job"("activeKey");

-- CreateIndex
CREATE INDEX "Job_state_runAt_idx" ON "Job"("state", "runAt");

-- CreateIndex
CREATE INDEX "Job_state_lockedUntil_idx" ON "Job"("state", "lockedUntil");

-- CreateIndex
CREATE INDEX "Job_state_finishedAt_idx" ON "Job"("state", "finishedAt");

-- CreateIndex
CREATE INDEX "GitRegistry_organizationId_createdAt_idx" ON "GitRegistry"("organizationId", "createdAt");

-- CreateIndex
CREATE INDEX "GitRegistry_enabled_lastSyncAttemptAt_idx" ON "GitRegistry"("enabled", "lastSyncAttemptAt");

-- CreateIndex
CREATE UNIQUE INDEX "GitRegistry_organizationId_name_key" ON "GitRegistry"("organizationId", "name");

-- AddForeignKey
ALTER TABLE "Application" ADD CONSTRAINT "Application_organizationId_fkey" FOREIGN KEY ("organizationId") REFERENCES "Organization"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "ApplicationVersion" ADD CONSTRAINT "ApplicationVersion_applicationId_fkey" FOREIGN KEY ("applicationId") REFERENCES "Application"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "GitRegistry" ADD CONSTRAINT "GitRegistry_organizationId_fkey" FOREIGN KEY ("organizationId") REFERENCES "Organization"("id") ON DELETE CASCADE ON UPDATE CASCADE;
