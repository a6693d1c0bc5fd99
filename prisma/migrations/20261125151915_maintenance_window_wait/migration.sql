-- AlterTable
ALTER TABLE "DeploymentDevice" ADD COLUMN     "windowOpensAt" TIMESTAMP(3);
