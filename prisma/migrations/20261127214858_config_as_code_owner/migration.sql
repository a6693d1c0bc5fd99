-- AlterTable
ALTER TABLE "AlertRule" ADD COLUMN     "managedBy" TEXT,
ADD COLUMN     "managedCommit" TEXT;

-- AlterTable
ALTER TABLE "Deployment" ADD COLUMN     "managedBy" TEXT,
ADD COLUMN     "managedCommit" TEXT;

-- AlterTable
ALTER TABLE "GitRegistry" ADD COLUMN     "managedBy" TEXT,
ADD COLUMN     "managedCommit" TEXT;

-- AlterTable
ALTER TABLE "NotificationTarget" ADD COLUMN     "managedBy" TEXT,
ADD COLUMN     "managedCommit" TEXT;

-- AlterTable
ALTER TABLE "OciRegistry" ADD COLUMN     "managedBy" TEXT,
ADD COLUMN     "managedCommit" TEXT;

-- AlterTable
ALTER TABLE "Role" ADD COLUMN     "managedBy" TEXT,
ADD COLUMN     "managedCommit" TEXT;
