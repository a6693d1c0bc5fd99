-- AlterTable
ALTER TABLE "ConfigLayer" ADD COLUMN     "managedBy" TEXT,
ADD COLUMN     "managedCommit" TEXT;
