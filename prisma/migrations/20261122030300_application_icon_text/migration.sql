-- AlterTable
ALTER TABLE "ApplicationVersion" DROP COLUMN "iconData",
ADD COLUMN     "iconBase64" TEXT;
