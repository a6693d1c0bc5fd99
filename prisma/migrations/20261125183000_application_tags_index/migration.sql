-- CreateIndex
CREATE INDEX "Application_tags_idx" ON "Application" USING GIN ("tags");
