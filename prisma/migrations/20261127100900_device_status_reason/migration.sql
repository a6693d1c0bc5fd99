-- AlterTable
ALTER TABLE "Device" ADD COLUMN     "statusReason" TEXT;
