-- AlterTable
ALTER TABLE "MailOutbox" ADD COLUMN     "invitationId" UUID,
ADD COLUMN     "lastAttemptAt" TIMESTAMP(3),
ADD COLUMN     "nextAttemptAt" TIMESTAMP(3);

-- CreateIndex
CREATE INDEX "MailOutbox_invitationId_createdAt_idx" ON "MailOutbox"("invitationId", "createdAt");

-- AddForeignKey
ALTER TABLE "MailOutbox" ADD CONSTRAINT "MailOutbox_invitationId_fkey" FOREIGN KEY ("invitationId") REFERENCES "Invitation"("id") ON DELETE SET NULL ON UPDATE CASCADE;
