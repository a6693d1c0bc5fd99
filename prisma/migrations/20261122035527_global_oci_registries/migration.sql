-- CreateTable
CREATE TABLE "GlobalOciRegistry" (
    "id" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "description" TEXT,
    "url" TEXT NOT NULL,
    "registryType" TEXT NOT NULL DEFAULT 'GENERIC',
    "authType" TEXT NOT NULL DEFAULT 'NONE',
    "credentialSealed" TEXT,
    "verifyTls" BOOLEAN NOT NULL DEFAULT true,
    "repositories" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "syncIntervalMinutes" INTEGER NOT NULL DEFAULT 60,
    "enabled" BOOLEAN NOT NULL DEFAULT true,
    "mandatory" BOOLEAN NOT NULL DEFAULT false,
    "priority" INTEGER NOT NULL DEFAULT 0,
    "lastHealthCheck" TIMESTAMP(3),
    "healthStatus" TEXT,
    "lastSyncAt" TIMESTAMP(3),
    "lastSyncError" TEXT,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "GlobalOciRegistry_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "GlobalOciRegistry_name_key" ON "GlobalOciRegistry"("name");

-- CreateIndex
CREATE INDEX "GlobalOciRegistry_priority_createdAt_idx" ON "GlobalOciRegistry"("priority", "createdAt");
