-- AlterTable
ALTER TABLE "Device" ADD COLUMN     "attestation" TEXT,
ADD COLUMN     "tpmEkHash" TEXT;

-- AlterTable
ALTER TABLE "EnrollmentRequest" ADD COLUMN     "attestation" JSONB;

-- CreateTable
CREATE TABLE "TrustedEkCa" (
    "id" UUID NOT NULL,
    "organizationId" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "certificatePem" TEXT NOT NULL,
    "fingerprint" TEXT NOT NULL,
    "subject" TEXT NOT NULL,
    "notAfter" TIMESTAMP(3) NOT NULL,
    "createdById" UUID,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "TrustedEkCa_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "TrustedEkCa_organizationId_createdAt_idx" ON "TrustedEkCa"("organizationId", "createdAt");

-- CreateIndex
CREATE UNIQUE INDEX "TrustedEkCa_organizationId_fingerprint_key" ON "TrustedEkCa"("organizationId", "fingerprint");

-- CreateIndex
CREATE INDEX "PreauthorizedDevice_organizationId_ekHash_idx" ON "PreauthorizedDevice"("organizationId", "ekHash");

-- AddForeignKey
ALTER TABLE "TrustedEkCa" ADD CONSTRAINT "TrustedEkCa_organizationId_fkey" FOREIGN KEY ("organizationId") REFERENCES "Organization"("id") ON DELETE CASCADE ON UPDATE CASCADE;
