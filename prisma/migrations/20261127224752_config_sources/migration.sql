-- CreateTable
CREATE TABLE "ConfigSource" (
    "id" UUID NOT NULL,
    "organizationId" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "url" TEXT NOT NULL,
    "branch" TEXT NOT NULL,
    "path" TEXT NOT NULL,
    "authType" TEXT NOT NULL DEFAULT 'NONE',
    "credentialSealed" TEXT,
    "prune" BOOLEAN NOT NULL DEFAULT false,
    "adopt" BOOLEAN NOT NULL DEFAULT false,
    "lastAppliedCommit" TEXT,
    "lastAppliedAt" TIMESTAMPTZ(3),
    "lastSyncStatus" TEXT,
    "lastSyncMessage" TEXT,
    "lastSyncAt" TIMESTAMPTZ(3),
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "ConfigSource_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "ConfigSource_organizationId_name_key" ON "ConfigSource"("organizationId", "name");
