// Runs once before all test files: prepares a migrated database that every file copies.
// PGlite: the database as a data directory, which every file's in-process service
// (harness.ts) and every service process (server-process.ts) starts from a copy of
// (migratedDataDir; a cold first start costs PGlite's initdb and every migration, ~10 s of CPU
// each time).
// PostgreSQL (DATABASE_URL set): a template database each file clones.
// First it says, once per run, which suites skip for want of a system peer or of DATABASE_URL
// (test/support/peers.ts); under CI_REQUIRE_PEERS=1 a missing peer fails the run there.
// It also builds the web console and the service (dist/service) when a build is missing or older
// than its sources, once, before the tests' service processes run them (several of them building
// at once would race).
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import type { TestProject } from "vitest/node";
import { openPGlite, openPostgres } from "../../src/db/adapters.js";
import { applyMigrations } from "../../src/db/migrate.js";
import { peerNotices } from "./peers.js";
import { buildConsole, consoleBuildState } from "../../src/lib/console-build.js";

declare module "vitest" {
  export interface ProvidedContext {
    /** a DATA_DIR holding the migrated embedded database (copied, never opened in place) */
    pgliteDataDir: string;
    postgresTemplate: string;
  }
}

export default async function setup(project: TestProject) {
  for (const line of peerNotices()) console.warn(line);
  clearStaleTemporaryFiles();
  const consoleBuild = consoleBuildState();
  if (consoleBuild === "missing" || consoleBuild === "stale") await buildConsole();
  // The service processes run its build, as `npm start` does: made again when a source changed.
  execFileSync(process.execPath, [fileURLToPath(new URL("../../scripts/build-service.mjs", import.meta.url)), "--if-stale"], { stdio: "inherit" });
  // And the CLI's bundle, which the fleet processes of test/cli would otherwise build, several at once.
  execFileSync(process.execPath, [fileURLToPath(new URL("../../cli/build.mjs", import.meta.url)), "--if-stale"], { stdio: "inherit" });
  const url = process.env.DATABASE_URL;
  if (url) {
    const template = `fleet_template_${process.pid}`;
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS ${template}`);
    await admin.query(`CREATE DATABASE ${template}`);
    const templateUrl = new URL(url);
    templateUrl.pathname = `/${template}`;
    const db = openPostgres(templateUrl.toString(), 2);
    await applyMigrations(db.raw);
    await db.raw.close();
    project.provide("postgresTemplate", template);
    project.provide("pgliteDataDir", "");
    return async () => {
      await admin.query(`DROP DATABASE IF EXISTS ${template}`).catch(() => undefined);
      await admin.end();
    };
  }
  const work = fs.mkdtempSync(path.join(os.tmpdir(), "fleet-test-"));
  const dataDir = path.join(work, "migrated-data-dir");
  const db = await openPGlite(dataDir);
  await applyMigrations(db.raw);
  await db.raw.close();
  project.provide("pgliteDataDir", dataDir);
  project.provide("postgresTemplate", "");
  return () => fs.rmSync(work, { recursive: true, force: true });
}

/**
 * Runs killed before their teardown leave their folders behind; on tmpfs (vitest.config.ts puts
 * TMPDIR there) they would hold memory until a reboot. What is older than six hours goes.
 */
function clearStaleTemporaryFiles() {
  const root = os.tmpdir();
  if (!root.startsWith("/dev/shm/")) return;
  const cutoff = Date.now() - 6 * 3600_000;
  for (const name of fs.readdirSync(root)) {
    const entry = path.join(root, name);
    try {
      if (fs.statSync(entry).mtimeMs < cutoff) fs.rmSync(entry, { recursive: true, force: true });
    } catch {
      // gone already, or another run's: not ours to insist on
    }
  }
}
