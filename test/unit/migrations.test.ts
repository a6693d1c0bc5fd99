// The migration history must produce exactly prisma/schema: a model change without its
// migration would pass on a developer's `db push` and break every upgrade.
import { execFileSync } from "node:child_process";
import { expect, it } from "vitest";

// The check takes ~15 s on a quiet 2-core machine; in a clean-clone run of the whole suite
// (every file beside it loading the same two cores) it took over 120 s once: five minutes.

it("prisma/migrations match prisma/schema", () => {
  const out = execFileSync(process.execPath, ["--import", "tsx", "scripts/new-migration.ts", "--check"], { encoding: "utf8", timeout: 300_000 });
  expect(out).toContain("migrations match the schema");
}, 330_000);
