-- AlterTable
ALTER TABLE "ActionJob" ADD COLUMN     "disruptionBudget" JSONB,
ADD COLUMN     "maintenanceWindows" JSONB;

-- AlterTable
ALTER TABLE "DeviceAction" ADD COLUMN     "budgetGroup" TEXT,
ADD COLUMN     "heldForBudget" BOOLEAN NOT NULL DEFAULT false,
ADD COLUMN     "windowOpensAt" TIMESTAMP(3);
