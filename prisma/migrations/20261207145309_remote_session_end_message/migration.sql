-- AlterTable
ALTER TABLE "RemoteSession" ADD COLUMN     "endMessage" TEXT;
