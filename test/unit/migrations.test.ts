// The migration history must produce exactly prisma/schema: a model change without its
// migration would pass on a developer's `db push` and break every upgrade.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { expect, it } from "vitest";

it("prisma/migrations match prisma/schema (and a lock left by a killed check is taken over)", () => {
  // A check killed mid-way leaves its lock behind; its holder's pid is gone. The next check
  // must take it over, not wait five minutes and fail (as every run did on a machine where a
  // killed check had left one in the shared temporary folder).
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "migrations-check-"));
  try {
    fs.mkdirSync(path.join(tmp, "fleet-migration.lock"));
    fs.writeFileSync(path.join(tmp, "fleet-migration.lock", "pid"), "999999999");
    const out = execFileSync(process.execPath, ["--import", "tsx", "scripts/new-migration.ts", "--check"], { encoding: "utf8", timeout: 120_000, env: { ...process.env, TMPDIR: tmp } });
    expect(out).toContain("migrations match the schema");
    expect(fs.existsSync(path.join(tmp, "fleet-migration.lock"))).toBe(false);
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}, 150_000);
