import fs from "node:fs";
import { configDefaults, defineConfig } from "vitest/config";
import LongestFirst from "./test/support/sequencer.js";

// Temporary files on tmpfs when the machine has room there (and TMPDIR is not set): every
// service a test starts on PGlite copies the migrated data directory (6,500 files, 42 MB) and
// removes it when it stops. On ext4 that took ~1 s to copy and ~2.7 s to remove, blocking the
// test's process; on /dev/shm, 0.3 s. The folder is set here, before the workers are forked,
// so that they, the services and Chromium inherit it; global-setup.ts clears what runs
// killed before their teardown left there.
const TEST_TMP_ROOT = "/dev/shm/fleet-tests";
if (!process.env.TMPDIR && tmpfsFits("/dev/shm", 4 * 1024 ** 3)) {
  fs.mkdirSync(TEST_TMP_ROOT, { recursive: true });
  process.env.TMPDIR = TEST_TMP_ROOT;
}

/** a tmpfs mounted at `dir` with `bytes` free, where programs may run (tests write scripts there) */
function tmpfsFits(dir: string, bytes: number): boolean {
  try {
    const mount = fs.readFileSync("/proc/mounts", "utf8").split("\n").map((line) => line.split(" ")).find((fields) => fields[1] === dir);
    if (!mount || mount[2] !== "tmpfs" || mount[3].split(",").includes("noexec")) return false;
    const stats = fs.statfsSync(dir);
    return stats.bavail * stats.bsize >= bytes;
  } catch {
    return false;
  }
}

// Everything the suite holds; web/src: the console's pure logic (parsing, chart data, buffers).
const EVERY_TEST = ["test/**/*.test.ts", "web/src/**/*.test.ts"];

// TEST_SCOPE=database (what .ci/run sets for its PostgreSQL phase): only the tests whose outcome
// depends on the database run again there: the API over HTTP, the operations fuzzer, the CLI
// against a service, and the unit tests that open a database. The browser tests and the pure unit tests would prove
// nothing new on a second database, so they run once, in the PGlite phase.
const DATABASE_TESTS = [
  "test/http/**/*.test.ts",
  "test/fuzz/**/*.test.ts",
  // the CLI against a service process on this phase's database (server-process.ts: "migrated")
  "test/cli/cli.test.ts",
  // remote access's device side against the service in process (the harness, on this phase's database)
  "test/agent/remote/with-service.test.ts",
  "test/unit/jobs.test.ts",
  "test/unit/platform-keys-migration.test.ts",
  "test/unit/raw-session.test.ts",
];
// ...less these two, which start their service process on PGlite whatever the phase (the first
// start of `npm start`; the stop signals): they ran in the PGlite phase already. And less the
// agent's outage test: it proves the agent's outbox and its Retry-After against a front that
// refuses and drops (91 s on PostgreSQL in CI); what the service stores of a batch is the ingest
// tests' subject (test/http/telemetry, test/http/logs), which run on both databases. The real
// agent on Podman (test/agent) runs once, on PGlite: 172 s of the PostgreSQL phase's 1,278 s in
// CI, for a service side (heartbeat plans, reports, pull grants) the API tests cover on both.
const NOT_DATABASE_TESTS = ["test/http/first-run/first-start.test.ts", "test/http/faults/stop-signals.test.ts", "test/http/agent/agent-outage.test.ts"];

export default defineConfig({
  test: {
    include: process.env.TEST_SCOPE === "database" ? DATABASE_TESTS : EVERY_TEST,
    exclude: process.env.TEST_SCOPE === "database" ? [...configDefaults.exclude, ...NOT_DATABASE_TESTS] : configDefaults.exclude,
    globalSetup: ["test/support/global-setup.ts"],
    // One database per test file; PGlite holds ~450 MB, so two files at a time on 2 cores.
    pool: "forks",
    // TEST_WORKERS: more or fewer files at once (a machine with more cores; an experiment).
    maxWorkers: Number(process.env.TEST_WORKERS) || 2,
    // A worker runs file after file in one process: the service's modules (express, Prisma,
    // PGlite, tRPC) load once per worker instead of once per file, and run JIT-compiled from
    // the second file on. Every file opens its own database and service, and module state is
    // the service's own (created per app), so files stay independent. (On 17 API test files,
    // one worker each, side by side on the same loaded machine: all 17 done in 606 s this way
    // while the isolated run had finished 14.)
    isolate: false,
    sequence: { sequencer: LongestFirst },
    testTimeout: 60_000,
    // expect.poll waits for a condition: on a loaded 2-core CI machine a page or a job may take
    // seconds to get there, never vitest's default 1 s (a sync history poll failed so in CI).
    // As long as the browser tests' UI_TIMEOUT_MS.
    expect: { poll: { timeout: 20_000, interval: 100 } },
    hookTimeout: 120_000,
    reporters: process.env.VITEST_JSON_REPORT ? ["default", ["json", { outputFile: process.env.VITEST_JSON_REPORT }]] : ["default"],
  },
});
