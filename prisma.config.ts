// Prisma CLI configuration. Prisma 6.19 runs generate/migrate through its WebAssembly
// engines ("client" engine + JS schema engine), so nothing is downloaded at install time.
// The CLI talks to the same database the server would open: PostgreSQL when DATABASE_URL
// is set, the embedded PGlite data directory otherwise.
import { defineConfig } from "prisma/config";
import { openMigrationAdapter } from "./src/db/prisma-cli-adapter.js";

export default defineConfig({
  experimental: { adapter: true },
  engine: "js",
  schema: "prisma/schema",
  migrations: { path: "prisma/migrations" },
  adapter: () => openMigrationAdapter(),
});
