// `node deploy/assemble.mjs OUT`, after the production build (`npm ci && npm run build`): lays
// out in OUT only what the running service reads. The Containerfile's final stage copies it
// whole; on a VM it is /opt/fleet-manager, which deploy/systemd/fleet-manager.service runs
// (docs/install.md).
//
//   OUT/package.json          {"type": "module"}: the bundle is ES modules in .js files
//   OUT/dist/service/*.js     the bundled service and its first-start migration program (no
//                             source maps: they carry the sources)
//   OUT/dist/tools/*.js       db:backup and db:restore, bundled the same way (docs/install.md)
//   OUT/prisma/migrations     applied by the service at every start (src/db/migrate.ts)
//   OUT/web/dist              the console's assets (no web/vite.config.ts: the service then
//                             never tries to rebuild the console, src/lib/console-build.ts)
//   OUT/node_modules          only the packages the bundles import (the bundles leave every npm
//                             package as an import) and what those depend on, as npm installed
//                             them: Prisma's runtime and query compiler, PGlite's WebAssembly
//                             and data files, express, pino, ...
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const out = path.resolve(process.argv[2] ?? "");
if (!process.argv[2]) {
  console.error("usage: node deploy/assemble.mjs OUT");
  process.exit(2);
}
// Into a new folder only: files of an earlier version left beside these would be served (an old
// console chunk) or imported (an old package). An upgrade assembles anew and swaps folders.
if (fs.existsSync(out) && fs.readdirSync(out).length > 0) {
  console.error(`${out} is not empty: assemble into a new folder (docs/install.md, "Upgrade")`);
  process.exit(2);
}
const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, "package.json"), "utf8"));

/**
 * Packages never loaded at run time: vite, which the bundle resolves only to build the console
 * itself (src/lib/console-build.ts), never without web/'s sources; typescript, a peer
 * dependency of @trpc/server for its types (23 MB).
 */
const BUILD_ONLY = new Set(["vite", "typescript"]);

// The tools: the same bundling as the service's (scripts/build-service.mjs), npm packages left as imports.
const { build } = await import("esbuild");
await build({
  absWorkingDir: ROOT,
  entryPoints: { "db-backup": "scripts/db-backup.ts", "db-restore": "scripts/db-restore.ts" },
  outdir: path.join(out, "dist", "tools"),
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  packages: "external",
  logLevel: "warning",
});

fs.mkdirSync(path.join(out, "dist", "service"), { recursive: true });
for (const file of fs.readdirSync(path.join(ROOT, "dist", "service"))) {
  if (file.endsWith(".js")) fs.copyFileSync(path.join(ROOT, "dist", "service", file), path.join(out, "dist", "service", file));
}
fs.cpSync(path.join(ROOT, "prisma", "migrations"), path.join(out, "prisma", "migrations"), { recursive: true });
fs.cpSync(path.join(ROOT, "web", "dist"), path.join(out, "web", "dist"), { recursive: true });
fs.writeFileSync(path.join(out, "package.json"), JSON.stringify({ name: pkg.name, version: pkg.version, private: true, type: "module" }, null, 2) + "\n");

// Every bare specifier the bundles import (import "x" included), import() or resolve, reduced to its package name; only names
// package.json depends on count (the rest of what the pattern finds is code, not a specifier).
const bundles = [path.join(out, "dist", "service"), path.join(out, "dist", "tools")]
  .flatMap((dir) => fs.readdirSync(dir).map((file) => fs.readFileSync(path.join(dir, file), "utf8")));
const specifiers = bundles.flatMap((code) => [...code.matchAll(/(?:\bfrom\s*|\bimport\s*\(?\s*|\bresolve\(\s*)"([^"./][^"]*)"/g)].map((m) => m[1]));
const names = new Set(specifiers.map((s) => (s.startsWith("@") ? s.split("/").slice(0, 2).join("/") : s.split("/")[0])));
const direct = [...names].filter((name) => pkg.dependencies[name] && !BUILD_ONLY.has(name)).sort();

// Those packages and everything they depend on (dependencies, peer dependencies, and the
// optional ones where installed), found where Node's resolution finds them from the package
// that depends on them. Optional peer dependencies are not followed (prisma's CLI and
// TypeScript for @prisma/client: building and typing only); one the service needs is its own
// import above.
function resolvePackage(fromDir, name) {
  for (let dir = fromDir; ; dir = path.dirname(dir)) {
    const candidate = path.join(dir, "node_modules", name);
    if (fs.existsSync(path.join(candidate, "package.json"))) return candidate;
    if (dir === ROOT || dir === path.dirname(dir)) return null;
  }
}
const found = new Set();
const queue = direct.map((name) => ({ name, from: ROOT, optional: false }));
while (queue.length) {
  const { name, from, optional } = queue.shift();
  const dir = resolvePackage(from, name);
  if (!dir) {
    if (optional) continue;
    throw new Error(`${name} (needed by ${path.relative(ROOT, from) || "the service"}) is not installed`);
  }
  if (found.has(dir)) continue;
  found.add(dir);
  const manifest = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8"));
  for (const dep of Object.keys(manifest.dependencies ?? {})) queue.push({ name: dep, from: dir, optional: false });
  for (const dep of Object.keys(manifest.optionalDependencies ?? {})) queue.push({ name: dep, from: dir, optional: true });
  for (const dep of Object.keys(manifest.peerDependencies ?? {})) {
    if (!manifest.peerDependenciesMeta?.[dep]?.optional && !BUILD_ONLY.has(dep)) queue.push({ name: dep, from: dir, optional: false });
  }
}
const locations = [...found].map((dir) => path.relative(ROOT, dir)).sort();
// A package's own node_modules comes with it: what is nested in a location copied already is there.
const copied = [];
for (const location of locations) {
  if (copied.some((parent) => location.startsWith(`${parent}/`))) continue;
  copied.push(location);
  fs.cpSync(path.join(ROOT, location), path.join(out, location), { recursive: true, verbatimSymlinks: true });
}
console.log(`assembled ${out}: ${direct.length} packages imported, ${locations.length} installed with their dependencies`);
