// `npm run bench [-- name ...]`: runs every benchmark in bench/ but fleet-day (or the named ones) one after
// the other, each in its own process so that one's warm caches and memory do not colour the
// next. Benchmarks print figures; they are not tests and assert nothing.
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const dir = path.dirname(fileURLToPath(import.meta.url));
const all = fs
  .readdirSync(dir)
  .filter((f) => f.endsWith(".ts") && f !== "run.ts")
  .map((f) => f.replace(/\.ts$/, ""))
  .sort();
const wanted = process.argv.slice(2);
const unknown = wanted.filter((w) => !all.includes(w));
if (unknown.length) {
  console.error(`unknown benchmark(s): ${unknown.join(", ")}; available: ${all.join(", ")}`);
  process.exit(2);
}
// Runs only when named: a day of a whole fleet takes hours (its enrollment, then the day itself).
const ONLY_WHEN_NAMED = ["fleet-day"];
const selected = wanted.length ? wanted : all.filter((name) => !ONLY_WHEN_NAMED.includes(name));
let failed = 0;
for (const name of selected) {
  console.log(`\n##### bench/${name}.ts`);
  const started = Date.now();
  const result = spawnSync(process.execPath, ["--import", "tsx", path.join(dir, `${name}.ts`)], { stdio: "inherit", env: process.env });
  const seconds = ((Date.now() - started) / 1000).toFixed(0);
  if (result.status !== 0) {
    failed++;
    console.error(`bench/${name}.ts failed (exit ${result.status ?? result.signal}) after ${seconds} s`);
  } else {
    console.log(`bench/${name}.ts done in ${seconds} s`);
  }
}
process.exit(failed ? 1 : 0);
