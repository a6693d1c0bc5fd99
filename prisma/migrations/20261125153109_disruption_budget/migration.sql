-- AlterTable
ALTER TABLE "DeploymentDevice" ADD COLUMN     "heldForBudget" BOOLEAN NOT NULL DEFAULT false;
