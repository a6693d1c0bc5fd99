-- CreateTable
CREATE TABLE "EncryptionKeyCheck" (
    "id" INTEGER NOT NULL DEFAULT 1,
    "sealed" TEXT NOT NULL,
    "createdAt" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "EncryptionKeyCheck_pkey" PRIMARY KEY ("id")
);
