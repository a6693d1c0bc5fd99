-- AlterTable
ALTER TABLE "Deployment" DROP COLUMN "strategyType";
