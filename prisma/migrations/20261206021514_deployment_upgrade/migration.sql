-- AlterTable
ALTER TABLE "Deployment" ADD COLUMN     "upgradedToId" UUID;

-- CreateIndex
CREATE INDEX "Deployment_upgradedToId_idx" ON "Deployment"("upgradedToId");
