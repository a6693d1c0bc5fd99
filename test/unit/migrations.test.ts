// The migration history must produce exactly prisma/schema: a model change without its
// migration would pass on a developer's `db push` and break every upgrade.
import { execFileSync } from "node:child_process";
import { expect, it } from "vitest";

it("prisma/migrations match prisma/schema", () => {
  const out = execFileSync(process.execPath, ["--import", "tsx", "scripts/new-migration.ts", "--check"], { encoding: "utf8", timeout: 120_000 });
  expect(out).toContain("migrations match the schema");
}, 150_000);
