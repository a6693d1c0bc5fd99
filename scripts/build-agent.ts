// npm run build:agent: what an operator copies to a device (docs/agent.md). The agent's sources
// (agent/src/cli.ts and all it imports, its npm dependencies included) become ONE file,
// agent/dist/fleet-agent.mjs, and `npm pack` makes agent/dist/fleet-agent-<version>.tgz of it
// with bin/ and systemd/. The packed package.json declares no dependencies (they are all in
// the bundle), so `npm install -g fleet-agent-<version>.tgz` downloads nothing: a device needs
// Node.js and the tarball, not the registry.
import { execFileSync } from "node:child_process";
import { builtinModules } from "node:module";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { build, type Plugin } from "esbuild";

const REPO = fileURLToPath(new URL("..", import.meta.url));
const AGENT = path.join(REPO, "agent");
export const BUNDLE_NAME = "fleet-agent.mjs";

/**
 * What must never reach a device: the service's own code (src/) and the server's dependencies.
 * The agent takes only types from the service; a value import would drag the service in.
 */
const SERVER_ONLY = [/^src\//, /node_modules\/(@prisma|prisma|@electric-sql|pglite-prisma-adapter|react|react-dom|express|pg|pg-[^/]+|vite)\//];

/**
 * ws's optional native add-ons (bufferutil, utf-8-validate), which ws requires inside a try and
 * does without: a device has neither, so the bundle holds a module that throws in their place
 * (ws then uses its JavaScript) instead of a require() of a package that is not there.
 */
const WITHOUT_NATIVE_ADDONS: Plugin = {
  name: "without-native-addons",
  setup(builder) {
    builder.onResolve({ filter: /^(bufferutil|utf-8-validate)$/ }, (args) => ({ path: args.path, namespace: "absent-addon" }));
    builder.onLoad({ filter: /.*/, namespace: "absent-addon" }, (args) => ({ contents: `throw new Error(${JSON.stringify(`${args.path} is not in the agent's bundle`)});`, loader: "js" }));
  },
};

export interface AgentBuild {
  bundlePath: string;
  bundleBytes: number;
  tarballPath: string;
  /** the source files in the bundle, relative to the repository */
  inputs: string[];
  /** what the bundle still loads at run time (import statements, import(), require()): Node's built-ins only */
  runtimeImports: string[];
}

export interface BuildAgentOptions {
  /** where the bundle and the tarball go; default agent/dist */
  outDir?: string;
  /** the program bundled; default agent/src/cli.ts (the tests give another to see the guard work) */
  entry?: string;
}

/** Builds the bundle and the tarball. */
export async function buildAgent(options: BuildAgentOptions = {}): Promise<AgentBuild> {
  const outDir = options.outDir ?? path.join(AGENT, "dist");
  mkdirSync(outDir, { recursive: true });
  const bundlePath = path.join(outDir, BUNDLE_NAME);
  const result = await build({
    entryPoints: [options.entry ?? path.join(AGENT, "src", "cli.ts")],
    outfile: bundlePath,
    bundle: true,
    platform: "node",
    target: "node20",
    format: "esm",
    // Bundled CommonJS (reflect-metadata, ...) calls require() for Node's built-ins, which an ES
    // module does not have: give it one.
    banner: { js: 'import { createRequire as __fleetAgentCreateRequire } from "node:module";\nconst require = __fleetAgentCreateRequire(import.meta.url);' },
    // Only Node's built-ins stay outside the bundle.
    external: [...builtinModules, ...builtinModules.map((name) => `node:${name}`)],
    // Whitespace and syntax only: half the size and ~1.5 MB less memory once loaded (the issue's
    // goal is 60 MB RSS), while functions keep their names in a device's stack traces.
    minifyWhitespace: true,
    minifySyntax: true,
    absWorkingDir: REPO,
    metafile: true,
    plugins: [WITHOUT_NATIVE_ADDONS],
    logLevel: "warning",
  });
  const inputs = Object.keys(result.metafile.inputs);
  const forbidden = inputs.filter((input) => SERVER_ONLY.some((pattern) => pattern.test(input)));
  if (forbidden.length > 0) {
    rmSync(bundlePath, { force: true });
    throw new Error(`the agent bundle would carry server code (the agent may import only types from the service):\n  ${forbidden.join("\n  ")}`);
  }
  const runtimeImports = [...new Set(Object.values(result.metafile.outputs).flatMap((output) => output.imports.map((imported) => imported.path)))];
  return { bundlePath, bundleBytes: statSync(bundlePath).size, tarballPath: pack(bundlePath, outDir), inputs, runtimeImports };
}

/**
 * `npm pack` of a staging copy of agent/ whose package.json has no dependencies (the bundle
 * holds them) and no scripts: installing the tarball runs nothing and fetches nothing.
 */
function pack(bundlePath: string, outDir: string): string {
  const manifest = JSON.parse(readFileSync(path.join(AGENT, "package.json"), "utf8")) as Record<string, unknown>;
  const { dependencies: _bundled, devDependencies: _dev, scripts: _scripts, ...packed } = manifest;
  const staging = mkdtempSync(path.join(os.tmpdir(), "fleet-agent-pack-"));
  try {
    writeFileSync(path.join(staging, "package.json"), `${JSON.stringify(packed, null, 2)}\n`);
    cpSync(path.join(AGENT, "bin"), path.join(staging, "bin"), { recursive: true });
    cpSync(path.join(AGENT, "systemd"), path.join(staging, "systemd"), { recursive: true });
    mkdirSync(path.join(staging, "dist"));
    cpSync(bundlePath, path.join(staging, "dist", BUNDLE_NAME));
    const output = execFileSync("npm", ["pack", "--json", "--pack-destination", outDir], { cwd: staging, encoding: "utf8", env: withoutNpmRunSettings() });
    const [{ filename }] = JSON.parse(output) as { filename: string }[];
    return path.join(outDir, filename);
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}

/**
 * This process's environment without what `npm run` adds for its package (npm_package_*, the
 * workspace's prefix in npm_config_*): the pack must see the staging directory's package only.
 */
function withoutNpmRunSettings(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([key]) => !/^npm_(package|config|lifecycle)_/i.test(key)));
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  const built = await buildAgent();
  console.log(`${path.relative(process.cwd(), built.bundlePath)}: ${(built.bundleBytes / 1024).toFixed(1)} KiB (${built.inputs.length} source files)`);
  console.log(`${path.relative(process.cwd(), built.tarballPath)}: ${(statSync(built.tarballPath).size / 1024).toFixed(1)} KiB; install on a device with: npm install -g ${path.basename(built.tarballPath)}`);
}
