// The web console's build (web/ -> web/dist, by Vite). `npm install` builds it; `npm start`
// builds it again first when it is missing or older than its sources (a `git pull` without a
// new install), and says so (the check: scripts/build-state.mjs, shared with the service's and
// the CLI's builds).
import { spawn } from "node:child_process";
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { InlineConfig } from "vite";
import { buildState } from "../../scripts/build-state.mjs";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
export const CONSOLE_SOURCE = path.join(ROOT, "web");
export const CONSOLE_DIST = path.join(CONSOLE_SOURCE, "dist");
const CONFIG_FILE = path.join(CONSOLE_SOURCE, "vite.config.ts");

/** "missing", "stale" (a source is newer than the build) or "fresh"; null when there are no sources (an installation without web/). */
export function consoleBuildState(): "missing" | "stale" | "fresh" | null {
  if (!fs.existsSync(CONFIG_FILE)) return null;
  // Sources (web/ but its dist/) and the root lock file (a dependency upgrade changes the bundle too).
  return buildState(path.join(CONSOLE_DIST, "index.html"), [CONSOLE_SOURCE, path.join(ROOT, "package-lock.json")]);
}

/** Builds web/ into web/dist; `overrides` are merged into its Vite configuration (the bundle test builds in memory). */
export async function buildConsole(overrides: InlineConfig = {}): Promise<Awaited<ReturnType<typeof import("vite").build>>> {
  const { build } = await import("vite");
  // Vite takes NODE_ENV from the environment when it is set, and anything but "production"
  // gives React's development build (3x the size, dev-only warnings): vitest sets "test".
  const nodeEnv = process.env.NODE_ENV;
  process.env.NODE_ENV = "production";
  try {
    return await build({ configFile: CONFIG_FILE, logLevel: "warn", mode: "production", ...overrides });
  } finally {
    if (nodeEnv === undefined) delete process.env.NODE_ENV;
    else process.env.NODE_ENV = nodeEnv;
  }
}

/**
 * The same build by Vite's own command in a child process: what the service's start uses. Vite
 * and Rollup take ~400 MB while building, which a long-lived process would keep resident
 * (measured: 700 MB idle after an in-process build against 290 MB without).
 */
export function buildConsoleInChildProcess(): Promise<void> {
  const vite = path.join(path.dirname(createRequire(import.meta.url).resolve("vite/package.json")), "bin", "vite.js");
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [vite, "build", "--config", CONFIG_FILE, "--logLevel", "warn", "--mode", "production"], {
      cwd: ROOT,
      // anything but "production" gives React's development build (see buildConsole)
      env: { ...process.env, NODE_ENV: "production" },
      stdio: ["ignore", "inherit", "inherit"],
    });
    child.on("error", reject);
    child.on("close", (code, signal) => (code === 0 ? resolve() : reject(new Error(`building the web console failed (vite build: exit ${code ?? signal})`))));
  });
}
