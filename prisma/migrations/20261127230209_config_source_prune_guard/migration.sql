-- AlterTable
ALTER TABLE "ConfigSource" ADD COLUMN     "pruneAllowedOnce" BOOLEAN NOT NULL DEFAULT false,
ADD COLUMN     "pruneLimit" INTEGER NOT NULL DEFAULT 10;
