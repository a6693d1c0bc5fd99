-- CreateTable
CREATE TABLE "OidcSignInAttempt" (
    "id" UUID NOT NULL,
    "stateHash" TEXT NOT NULL,
    "verifierHash" TEXT NOT NULL,
    "nonce" TEXT NOT NULL,
    "redirectUri" TEXT NOT NULL,
    "returnTo" TEXT NOT NULL,
    "expiresAt" TIMESTAMP(3) NOT NULL,
    "consumedAt" TIMESTAMP(3),
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "OidcSignInAttempt_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "OidcSignInAttempt_stateHash_key" ON "OidcSignInAttempt"("stateHash");

-- CreateIndex
CREATE INDEX "OidcSignInAttempt_expiresAt_idx" ON "OidcSignInAttempt"("expiresAt");
