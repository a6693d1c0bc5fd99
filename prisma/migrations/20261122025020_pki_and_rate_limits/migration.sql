-- CreateTable
CREATE TABLE "CaCertificate" (
    "id" UUID NOT NULL,
    "organizationId" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "subject" TEXT NOT NULL,
    "issuer" TEXT NOT NULL,
    "serialNumber" TEXT NOT NULL,
    "keyAlgorithm" TEXT NOT NULL,
    "signatureAlgorithm" TEXT NOT NULL,
    "subjectAltNames" TEXT[],
    "fingerprint" TEXT NOT NULL,
    "notBefore" TIMESTAMP(3) NOT NULL,
    "notAfter" TIMESTAMP(3) NOT NULL,
    "isRoot" BOOLEAN NOT NULL,
    "isDefault" BOOLEAN NOT NULL DEFAULT false,
    "certificatePem" TEXT NOT NULL,
    "chainPems" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "privateKeyEncrypted" TEXT,
    "issuerKey" TEXT NOT NULL,
    "origin" TEXT NOT NULL,
    "renewedFromId" UUID,
    "retiredAt" TIMESTAMP(3),
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "CaCertificate_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "DeviceCertificate" (
    "id" UUID NOT NULL,
    "organizationId" UUID NOT NULL,
    "deviceId" UUID NOT NULL,
    "caId" UUID,
    "issuerKey" TEXT NOT NULL,
    "serialNumber" TEXT NOT NULL,
    "fingerprint" TEXT NOT NULL,
    "subject" TEXT NOT NULL,
    "issuer" TEXT NOT NULL,
    "keyAlgorithm" TEXT NOT NULL,
    "notBefore" TIMESTAMP(3) NOT NULL,
    "notAfter" TIMESTAMP(3) NOT NULL,
    "certificatePem" TEXT NOT NULL,
    "revoked" BOOLEAN NOT NULL DEFAULT false,
    "revokedAt" TIMESTAMP(3),
    "revokeReason" TEXT,
    "renewedFromId" UUID,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "DeviceCertificate_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "CertificateRevocationList" (
    "organizationId" UUID NOT NULL,
    "issuerKey" TEXT NOT NULL,
    "crlNumber" INTEGER NOT NULL,
    "thisUpdate" TIMESTAMP(3) NOT NULL,
    "nextUpdate" TIMESTAMP(3) NOT NULL,
    "der" BYTEA NOT NULL,
    "stale" BOOLEAN NOT NULL DEFAULT false,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "CertificateRevocationList_pkey" PRIMARY KEY ("organizationId","issuerKey")
);

-- CreateTable
CREATE TABLE "rate_limits" (
    "key" VARCHAR(255) NOT NULL,
    "points" INTEGER NOT NULL DEFAULT 0,
    "expire" BIGINT,

    CONSTRAINT "rate_limits_pkey" PRIMARY KEY ("key")
);

-- CreateIndex
CREATE INDEX "CaCertificate_organizationId_createdAt_idx" ON "CaCertificate"("organizationId", "createdAt");

-- CreateIndex
CREATE INDEX "CaCertificate_organizationId_issuerKey_idx" ON "CaCertificate"("organizationId", "issuerKey");

-- CreateIndex
CREATE UNIQUE INDEX "CaCertificate_organizationId_name_key" ON "CaCertificate"("organizationId", "name");

-- CreateIndex
CREATE UNIQUE INDEX "CaCertificate_organizationId_fingerprint_key" ON "CaCertificate"("organizationId", "fingerprint");

-- CreateIndex
CREATE UNIQUE INDEX "DeviceCertificate_fingerprint_key" ON "DeviceCertificate"("fingerprint");

-- CreateIndex
CREATE INDEX "DeviceCertificate_organizationId_deviceId_createdAt_idx" ON "DeviceCertificate"("organizationId", "deviceId", "createdAt");

-- CreateIndex
CREATE INDEX "DeviceCertificate_organizationId_notAfter_idx" ON "DeviceCertificate"("organizationId", "notAfter");

-- CreateIndex
CREATE INDEX "DeviceCertificate_organizationId_createdAt_idx" ON "DeviceCertificate"("organizationId", "createdAt");

-- CreateIndex
CREATE INDEX "DeviceCertificate_caId_revoked_notAfter_idx" ON "DeviceCertificate"("caId", "revoked", "notAfter");

-- CreateIndex
CREATE INDEX "DeviceCertificate_organizationId_issuerKey_revoked_idx" ON "DeviceCertificate"("organizationId", "issuerKey", "revoked");

-- CreateIndex
CREATE INDEX "DeviceCertificate_renewedFromId_idx" ON "DeviceCertificate"("renewedFromId");

-- AddForeignKey
ALTER TABLE "CaCertificate" ADD CONSTRAINT "CaCertificate_organizationId_fkey" FOREIGN KEY ("organizationId") REFERENCES "Organization"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "DeviceCertificate" ADD CONSTRAINT "DeviceCertificate_organizationId_fkey" FOREIGN KEY ("organizationId") REFERENCES "Organization"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "DeviceCertificate" ADD CONSTRAINT "DeviceCertificate_caId_fkey" FOREIGN KEY ("caId") REFERENCES "CaCertificate"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "DeviceCertificate" ADD CONSTRAINT "DeviceCertificate_renewedFromId_fkey" FOREIGN KEY ("renewedFromId") REFERENCES "DeviceCertificate"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "CertificateRevocationList" ADD CONSTRAINT "CertificateRevocationList_organizationId_fkey" FOREIGN KEY ("organizationId") REFERENCES "Organization"("id") ON DELETE CASCADE ON UPDATE CASCADE;
