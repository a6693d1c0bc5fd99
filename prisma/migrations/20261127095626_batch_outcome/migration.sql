-- AlterTable
ALTER TABLE "DeploymentBatch" ADD COLUMN     "outcome" JSONB;
