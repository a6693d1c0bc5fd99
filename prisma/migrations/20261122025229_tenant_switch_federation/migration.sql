-- CreateTable
CREATE TABLE "TenantSwitch" (
    "id" UUID NOT NULL,
    "userId" UUID NOT NULL,
    "sessionId" UUID,
    "fromOrgId" UUID,
    "fromOrgName" TEXT,
    "toOrgId" UUID NOT NULL,
    "toOrgName" TEXT,
    "reason" TEXT,
    "durationMinutes" INTEGER NOT NULL,
    "switchedAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expiresAt" TIMESTAMP(3) NOT NULL,
    "returnedAt" TIMESTAMP(3),
    "endedAt" TIMESTAMP(3),
    "endReason" TEXT,

    CONSTRAINT "TenantSwitch_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "FederationGroupMapping" (
    "id" UUID NOT NULL,
    "group" TEXT NOT NULL,
    "organizationId" UUID NOT NULL,
    "roleId" UUID NOT NULL,
    "description" TEXT,
    "enabled" BOOLEAN NOT NULL DEFAULT true,
    "createdById" UUID,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "FederationGroupMapping_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "FederatedIdentity" (
    "userId" UUID NOT NULL,
    "issuer" TEXT NOT NULL,
    "subject" TEXT NOT NULL,
    "groups" TEXT[],
    "lastTokenAt" TIMESTAMP(3) NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "FederatedIdentity_pkey" PRIMARY KEY ("userId")
);

-- CreateTable
CREATE TABLE "FederationGrant" (
    "organizationId" UUID NOT NULL,
    "userId" UUID NOT NULL,
    "mappingId" UUID,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "FederationGrant_pkey" PRIMARY KEY ("organizationId","userId")
);

-- CreateIndex
CREATE INDEX "TenantSwitch_sessionId_endedAt_idx" ON "TenantSwitch"("sessionId", "endedAt");

-- CreateIndex
CREATE INDEX "TenantSwitch_userId_switchedAt_idx" ON "TenantSwitch"("userId", "switchedAt");

-- CreateIndex
CREATE INDEX "TenantSwitch_endedAt_switchedAt_idx" ON "TenantSwitch"("endedAt", "switchedAt");

-- CreateIndex
CREATE INDEX "FederationGroupMapping_organizationId_idx" ON "FederationGroupMapping"("organizationId");

-- CreateIndex
CREATE UNIQUE INDEX "FederationGroupMapping_group_organizationId_key" ON "FederationGroupMapping"("group", "organizationId");

-- CreateIndex
CREATE INDEX "FederationGrant_mappingId_idx" ON "FederationGrant"("mappingId");

-- AddForeignKey
ALTER TABLE "TenantSwitch" ADD CONSTRAINT "TenantSwitch_sessionId_fkey" FOREIGN KEY ("sessionId") REFERENCES "Session"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "FederationGroupMapping" ADD CONSTRAINT "FederationGroupMapping_organizationId_fkey" FOREIGN KEY ("organizationId") REFERENCES "Organization"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "FederationGroupMapping" ADD CONSTRAINT "FederationGroupMapping_roleId_fkey" FOREIGN KEY ("roleId") REFERENCES "Role"("id") ON DELETE NO ACTION ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "FederatedIdentity" ADD CONSTRAINT "FederatedIdentity_userId_fkey" FOREIGN KEY ("userId") REFERENCES "User"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "FederationGrant" ADD CONSTRAINT "FederationGrant_organizationId_userId_fkey" FOREIGN KEY ("organizationId", "userId") REFERENCES "Membership"("organizationId", "userId") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "FederationGrant" ADD CONSTRAINT "FederationGrant_mappingId_fkey" FOREIGN KEY ("mappingId") REFERENCES "FederationGroupMapping"("id") ON DELETE SET NULL ON UPDATE CASCADE;
