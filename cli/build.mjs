// Builds cli/dist from cli/src with esbuild: the entry (main.js) holds the command tree and
// commander, and every command's code is a chunk of its own loaded when that command runs
// (code splitting), so `fleet --help` parses a small file. bin/fleet.js runs this whenever a
// source is newer than the build (in a clone, what runs is what was just edited;
// scripts/build-state.mjs), and the tsx fallback covers a machine without esbuild.
import { existsSync, mkdirSync, renameSync, rmSync } from "node:fs";
import { builtinModules } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { buildState } from "../scripts/build-state.mjs";

const CLI = path.dirname(fileURLToPath(import.meta.url));
export const SRC = path.join(CLI, "src");
export const DIST = path.join(CLI, "dist");

export async function buildCli() {
  const { build } = await import("esbuild");
  // built next to dist and swapped in, so that a fleet running meanwhile never reads half a build
  const out = `${DIST}.${process.pid}.tmp`;
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  const bridge = path.join(SRC, "mcp", "stdio-bridge.ts");
  await build({
    entryPoints: { main: path.join(SRC, "main.ts"), ...(existsSync(bridge) ? { "mcp/stdio-bridge": bridge } : {}) },
    outdir: out,
    bundle: true,
    splitting: true,
    format: "esm",
    platform: "node",
    target: "node20",
    logLevel: "error",
    banner: { js: 'import { createRequire as __fleetCreateRequire } from "node:module";\nconst require = __fleetCreateRequire(import.meta.url);' },
    external: [...builtinModules, ...builtinModules.map((m) => `node:${m}`), "bufferutil", "utf-8-validate"],
  });
  rmSync(`${DIST}.old.${process.pid}`, { recursive: true, force: true });
  if (existsSync(DIST)) renameSync(DIST, `${DIST}.old.${process.pid}`);
  renameSync(out, DIST);
  rmSync(`${DIST}.old.${process.pid}`, { recursive: true, force: true });
}

/** Whether cli/dist is there and no source (nor this script) is newer (what bin/fleet.js checks before it runs it). */
export function isFresh() {
  return buildState(path.join(DIST, "main.js"), [SRC, fileURLToPath(import.meta.url)]) === "fresh";
}

// `node cli/build.mjs` (npm run build, the test suite's global setup): `--if-stale` builds only
// when a source is newer, so that no fleet process of a test run has to build it (several at
// once would swap dist under each other).
if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  if (!(process.argv.includes("--if-stale") && isFresh())) await buildCli();
}
