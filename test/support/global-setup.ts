// Runs once before all test files: prepares a migrated database that every file copies.
// PGlite: a data-directory dump loaded by each file (~0.6 s instead of a 3 s cold start).
// PostgreSQL (DATABASE_URL set): a template database each file clones.
// First it says, once per run, which suites skip for want of a system peer or of DATABASE_URL
// (test/support/peers.ts); under CI_REQUIRE_PEERS=1 a missing peer fails the run there.
// It also builds the web console when its build is missing or older than its sources, once,
// before the browser tests' services serve it (several of them building at once would race).
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import type { TestProject } from "vitest/node";
import { openPGlite, openPostgres } from "../../src/db/adapters.js";
import { applyMigrations } from "../../src/db/migrate.js";
import { peerNotices } from "./peers.js";
import { buildConsole, consoleBuildState } from "../../src/lib/console-build.js";

declare module "vitest" {
  export interface ProvidedContext {
    pgliteDump: string;
    postgresTemplate: string;
  }
}

export default async function setup(project: TestProject) {
  for (const line of peerNotices()) console.warn(line);
  const consoleBuild = consoleBuildState();
  if (consoleBuild === "missing" || consoleBuild === "stale") await buildConsole();
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
    project.provide("pgliteDump", "");
    return async () => {
      await admin.query(`DROP DATABASE IF EXISTS ${template}`).catch(() => undefined);
      await admin.end();
    };
  }
  const db = await openPGlite();
  await applyMigrations(db.raw);
  const dump = await db.pglite!.dumpDataDir("gzip");
  await db.raw.close();
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "fleet-test-")), "migrated.tar.gz");
  fs.writeFileSync(file, Buffer.from(await dump.arrayBuffer()));
  project.provide("pgliteDump", file);
  project.provide("postgresTemplate", "");
  return () => fs.rmSync(path.dirname(file), { recursive: true, force: true });
}
