// Whether a build is up to date with what it was made from: the one check of the three builds
// that a start or a command makes again by itself when it is out of date (the service's
// dist/service: scripts/build-service.mjs, run by `npm start`; the CLI's cli/dist: cli/build.mjs,
// run by bin/fleet.js; the web console's web/dist: src/lib/console-build.ts, run by the service's
// start), and the test suite's global setup before its processes run them. A build is stale
// when a file it was made from was modified after it (a `git pull` without a new install, an
// edit) or is gone. Plain JavaScript: it runs before anything could compile TypeScript.
import fs from "node:fs";
import path from "node:path";

/** Folders never walked for inputs: builds, and installed packages (the lock file stands for those). */
const NOT_SOURCES = new Set(["dist", "node_modules"]);

/**
 * The newest modification time among the files of `input` (a file, or a folder walked without
 * dist/ and node_modules/); Infinity when it is gone (the build was made from something that
 * is no longer there).
 */
function newestChange(input) {
  const stat = fs.statSync(input, { throwIfNoEntry: false });
  if (!stat) return Infinity;
  if (!stat.isDirectory()) return stat.mtimeMs;
  let newest = 0;
  for (const entry of fs.readdirSync(input, { withFileTypes: true })) {
    if (entry.isDirectory() && NOT_SOURCES.has(entry.name)) continue;
    newest = Math.max(newest, newestChange(path.join(input, entry.name)));
  }
  return newest;
}

/**
 * "missing" (no `output`), "stale" (a file of `inputs` was modified after `output` was
 * written, or is gone) or "fresh". `output`: the build's file whose modification time is when
 * it was built; `inputs`: files and folders (paths).
 */
export function buildState(output, inputs) {
  const built = fs.statSync(output, { throwIfNoEntry: false });
  if (!built) return "missing";
  return inputs.some((input) => newestChange(input) > built.mtimeMs) ? "stale" : "fresh";
}
