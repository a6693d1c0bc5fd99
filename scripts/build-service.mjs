// The service's production build: src/main.ts and everything it imports (the generated Prisma
// client included) bundled by esbuild into dist/service/main.js, the npm packages left as imports
// of node_modules. `npm start` runs that file (scripts/start.mjs); no transpiler runs in the
// service. `npm run build` (and `npm install`) builds it; `npm start` and the test suite build it
// again first when it is missing or a file it was built from changed since (a `git pull` without
// a new install, an edit): the build's metafile lists those files. Plain JavaScript: it runs
// before anything could compile TypeScript.
//
// dist/service/ is two folders below the root, as the files of src/<area>/ are: the paths the
// code computes from its own location (prisma/migrations in src/db/migrate.ts, web/ in
// src/lib/console-build.ts) resolve the same from the sources and from the bundle.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { buildState } from "./build-state.mjs";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
export const SERVICE_ENTRY = path.join(ROOT, "dist", "service", "main.js");
const METAFILE = path.join(ROOT, "dist", "service", "inputs.json");

/**
 * Prisma's query compiler (WebAssembly) comes as a 2.6 MB base64 string in a module of its own,
 * which the client imports once, at its first query, to compile it. Imported as it is, the
 * module's source and the string both stay in memory for the life of the process (5 MB). In the
 * bundle the import gets a stand-in whose `wasm` reads the string from that same file when the
 * client converts it (Buffer.from takes the string its valueOf gives): garbage once compiled.
 * The generated client's decoder is checked to still be Buffer.from(..., 'base64').
 */
const PRISMA_WASM_BASE64 = /^@prisma\/client\/runtime\/query_compiler_bg\.[a-z]+\.wasm-base64\.mjs$/;
const PRISMA_DECODER = "Buffer.from(wasmBase64, 'base64')";
const PRISMA_WASM_NAMESPACE = "prisma-wasm-on-demand";
const prismaWasmOnDemand = {
  name: "prisma-wasm-on-demand",
  setup(build) {
    build.onResolve({ filter: PRISMA_WASM_BASE64 }, (args) => {
      const importer = fs.readFileSync(args.importer, "utf8");
      if (!importer.includes(PRISMA_DECODER)) {
        return { errors: [{ text: `${path.relative(ROOT, args.importer)} no longer decodes the query compiler with ${PRISMA_DECODER}: update prismaWasmOnDemand in scripts/build-service.mjs` }] };
      }
      return { path: args.path, namespace: PRISMA_WASM_NAMESPACE };
    });
    build.onLoad({ filter: /.*/, namespace: PRISMA_WASM_NAMESPACE }, (args) => ({
      loader: "js",
      resolveDir: ROOT,
      contents: [
        `import { readFileSync } from "node:fs";`,
        `import { fileURLToPath } from "node:url";`,
        `const file = fileURLToPath(import.meta.resolve(${JSON.stringify(args.path)}));`,
        `export const wasm = { valueOf() { const source = readFileSync(file, "latin1"); return source.slice(source.indexOf('"') + 1, source.lastIndexOf('"')); } };`,
      ].join("\n"),
    }));
  },
};

/**
 * "missing", "stale" (a file it was built from is newer, or gone) or "fresh" (scripts/build-state.mjs).
 * `outdir`: where the build is (dist/service; a test builds elsewhere).
 */
export function serviceBuildState(outdir = path.dirname(SERVICE_ENTRY)) {
  const metafile = path.join(outdir, path.basename(METAFILE));
  if (!fs.existsSync(metafile)) return "missing";
  const inputs = JSON.parse(fs.readFileSync(metafile, "utf8")).map((input) => path.join(ROOT, input));
  // The lock file too (an upgraded package may change what a bundled import resolves to), and
  // this script (how the bundle is made).
  return buildState(path.join(outdir, path.basename(SERVICE_ENTRY)), [...inputs, path.join(ROOT, "package-lock.json"), fileURLToPath(import.meta.url)]);
}

/**
 * Bundles the service into dist/service/ (about a second; `outdir`: elsewhere); resolves to the
 * bundle's size in bytes.
 */
export async function buildService(outdir = path.dirname(SERVICE_ENTRY)) {
  const { build } = await import("esbuild");
  const result = await build({
    absWorkingDir: ROOT,
    // The service, and the program that creates the embedded database on a first start in a
    // process of its own (src/db/first-start-migration.ts): dist/service/main.js and migrate-main.js.
    entryPoints: ["src/main.ts", "src/migrate-main.ts"],
    outdir,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    packages: "external",
    // For a person reading a stack trace (node --enable-source-maps); not loaded otherwise.
    sourcemap: "linked",
    metafile: true,
    logLevel: "warning",
    plugins: [prismaWasmOnDemand],
  });
  // The files it was made from: the metafile's inputs but the stand-in of the plugin above,
  // which is no file (esbuild names it "namespace:path"; the file it reads is a package's).
  const files = Object.keys(result.metafile.inputs).filter((input) => !input.startsWith(`${PRISMA_WASM_NAMESPACE}:`));
  fs.writeFileSync(path.join(outdir, path.basename(METAFILE)), JSON.stringify(files));
  return fs.statSync(path.join(outdir, path.basename(SERVICE_ENTRY))).size;
}

/** Builds when the build is missing or stale; `say` is told why first. */
export async function ensureServiceBuild(say = () => undefined, outdir = path.dirname(SERVICE_ENTRY)) {
  const state = serviceBuildState(outdir);
  if (state === "fresh") return;
  say(`building the service first (dist/service is ${state === "missing" ? "missing" : "older than its sources"}; \`npm run build\` builds it)`);
  await buildService(outdir);
}

// `node scripts/build-service.mjs`: build now (`--if-stale`: only when missing or stale).
if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const started = Date.now();
  if (process.argv.includes("--if-stale") && serviceBuildState() === "fresh") process.exit(0);
  const bytes = await buildService();
  console.log(`dist/service/main.js: ${(bytes / 1024).toFixed(0)} KiB in ${Date.now() - started} ms`);
}
