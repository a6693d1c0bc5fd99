-- AlterTable
ALTER TABLE "CertificateRevocationList" DROP COLUMN "der",
ADD COLUMN     "pem" TEXT NOT NULL;
