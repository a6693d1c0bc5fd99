// Start-up and idle memory of the service as `npm start` runs it (the production build,
// dist/service/main.js, by node alone) beside the sources through tsx (what `npm start` ran
// before the build), in the same run: time to "ready" on a first start (an empty DATA_DIR:
// PGlite's initdb and every migration) and on a restart of that directory, and the resident
// memory (VmRSS of the process) after IDLE_SECONDS of idling, after each. With PostgreSQL
// binaries installed, the same on a throwaway PostgreSQL (restart = a migrated database).
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { startThrowawayPostgres } from "./support/postgres.js";
import { machineLine } from "./support/machine.js";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const IDLE_SECONDS = Number(process.env.BENCH_IDLE_SECONDS ?? 60);
/** the V8 flags `npm start` passes (package.json's start script) */
const START_FLAGS = (JSON.parse(fs.readFileSync(path.join(ROOT, "package.json"), "utf8")).scripts.start as string).match(/--[\w-]+(=\S+)?/g) ?? [];
const COMMANDS: Record<string, string[]> = {
  build: [...START_FLAGS, path.join(ROOT, "dist", "service", "main.js")],
  tsx: ["--import", "tsx", path.join(ROOT, "src", "main.ts")],
};

function rssMb(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, "utf8");
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) / 1024;
}

/** Starts the service, waits for "ready", idles, reads RSS, stops it. */
async function run(command: string[], env: Record<string, string>): Promise<{ readyMs: number; rssMb: number }> {
  const started = Date.now();
  const child = spawn(process.execPath, command, {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? "", HOME: os.tmpdir(), HOST: "127.0.0.1", PORT: "0", LOG_LEVEL: "info", BOOTSTRAP_API_KEY: `fm_${"b".repeat(40)}`, BOOTSTRAP_ADMIN_PASSWORD: "bench-admin-password", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  const readyMs = await new Promise<number>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('"msg":"ready"')) resolve(Date.now() - started);
    };
    child.stdout!.on("data", onData);
    child.stderr!.on("data", onData);
    child.once("exit", (code) => reject(new Error(`exited with ${code}:\n${output}`)));
  });
  await new Promise((r) => setTimeout(r, IDLE_SECONDS * 1000));
  const rss = rssMb(child.pid!);
  const exited = new Promise((r) => child.once("exit", r));
  child.kill("SIGTERM");
  await exited;
  return { readyMs, rssMb: rss };
}

const fmt = (r: { readyMs: number; rssMb: number }) => `ready ${(r.readyMs / 1000).toFixed(1)} s, RSS after ${IDLE_SECONDS} s idle ${r.rssMb.toFixed(0)} MB`;

console.log(machineLine());
if (!fs.existsSync(COMMANDS.build.at(-1)!)) {
  console.error("dist/service/main.js is missing: npm run build");
  process.exit(1);
}
for (const [name, command] of Object.entries(COMMANDS)) {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), `bench-startup-${name}-`));
  try {
    const first = await run(command, { DATA_DIR: dataDir });
    const again = await run(command, { DATA_DIR: dataDir });
    console.log(`PGlite, ${name.padEnd(5)} first start: ${fmt(first)}; restart: ${fmt(again)}`);
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

const postgres = await startThrowawayPostgres();
if (postgres) {
  try {
    for (const [name, command] of Object.entries(COMMANDS)) {
      const database = `bench_startup_${name}`;
      const admin = new pg.Client({ connectionString: postgres.url });
      await admin.connect();
      await admin.query(`CREATE DATABASE ${database}`);
      await admin.end();
      const url = new URL(postgres.url);
      url.pathname = `/${database}`;
      const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), `bench-startup-pg-${name}-`));
      try {
        const first = await run(command, { DATA_DIR: dataDir, DATABASE_URL: url.toString() });
        const again = await run(command, { DATA_DIR: dataDir, DATABASE_URL: url.toString() });
        console.log(`PostgreSQL ${postgres.version}, ${name.padEnd(5)} first start: ${fmt(first)}; restart: ${fmt(again)}`);
      } finally {
        fs.rmSync(dataDir, { recursive: true, force: true });
      }
    }
  } finally {
    postgres.stop();
  }
}
