-- AlterTable
ALTER TABLE "ApiKey" ADD COLUMN     "replacedAt" TIMESTAMP(3),
ADD COLUMN     "replacedById" UUID;

-- CreateIndex
CREATE INDEX "ApiKey_replacedById_idx" ON "ApiKey"("replacedById");
