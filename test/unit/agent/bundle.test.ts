// npm run build:agent (scripts/build-agent.ts): the one file and the tarball an operator puts on
// a device. Built here into a temporary directory (agent/dist in the checkout would shadow the
// sources that `npx fleet-agent` runs), then installed from the tarball with npm, offline, into
// a temporary prefix. Nothing here depends on what agent/src/cli.ts prints: only that the
// program loads and answers `--help` without a module error.
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { isBuiltin } from "node:module";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildAgent, type AgentBuild } from "../../../scripts/build-agent.js";

const REPO = path.resolve(import.meta.dirname, "../../..");
const work = mkdtempSync(path.join(os.tmpdir(), "agent-bundle-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

let built: AgentBuild;
beforeAll(async () => {
  built = await buildAgent({ outDir: path.join(work, "dist") });
});

// What Node says when a bundle is broken: a module it cannot find or load, code it cannot parse.
const LOAD_ERROR = /ERR_MODULE_NOT_FOUND|ERR_REQUIRE_ESM|Cannot find (module|package)|Dynamic require of|SyntaxError|ReferenceError/;

/** Runs `command --help`: the program started when it ended 0 or said something, and no module error came. */
function expectStarts(command: string, args: string[]) {
  const run = spawnSync(command, [...args, "--help"], { cwd: work, encoding: "utf8", timeout: 30_000 });
  const output = `${run.stdout}${run.stderr}`;
  expect(run.error, "it ends by itself").toBeUndefined();
  expect(output).not.toMatch(LOAD_ERROR);
  expect(run.status === 0 || output.trim().length > 0, `exit ${run.status}, output '${output}'`).toBe(true);
}

describe("the bundle", () => {
  it("is one file holding the agent's sources and dependencies, nothing of the service or its server dependencies", () => {
    expect(built.bundlePath).toBe(path.join(work, "dist", "fleet-agent.mjs"));
    expect(built.bundleBytes).toBeGreaterThan(0);
    expect(built.inputs).toContain("agent/src/cli.ts");
    for (const input of built.inputs) {
      expect(input).not.toMatch(/^src\//);
      expect(input).not.toMatch(/node_modules\/(@prisma|prisma|@electric-sql|react|react-dom|express|pg)\//);
    }
  });

  it("loads nothing at run time but Node's built-ins (esbuild's own account, require() of bundled CommonJS included)", () => {
    expect(built.runtimeImports.filter((specifier) => !isBuiltin(specifier))).toEqual([]);
    // bundled CommonJS (reflect-metadata, what @peculiar/x509 brings) calls require("buffer") and
    // the like, which an ES module only has through createRequire
    expect(readFileSync(built.bundlePath, "utf8")).toMatch(/^import \{ createRequire as (\w+) \} from "node:module";\nconst require = \1\(import\.meta\.url\);/);
  });

  it("starts with node, outside the repository (no node_modules to fall back on)", () => {
    expectStarts(process.execPath, [built.bundlePath]);
  });

  it("the agent's core and host, bundled, run outside the repository: a device key and CSR (x509, yaml and their CommonJS), facts, metrics", async () => {
    const entry = path.join(work, "core-and-host.ts");
    const agentFile = (file: string) => JSON.stringify(path.join(REPO, "agent/src", file));
    writeFileSync(
      entry,
      [
        `import { createCsr, generateDeviceKeys } from ${agentFile("core/identity.ts")};`,
        `import { readFacts } from ${agentFile("host/facts.ts")};`,
        `import { HostMetrics } from ${agentFile("host/metrics.ts")};`,
        // yaml (the agent reads compose files with it) as Node resolves it: its CommonJS build, which requires "process"
        `import YAML from ${JSON.stringify(path.join(REPO, "node_modules/yaml/dist/index.js"))};`,
        `const csr = await createCsr(await generateDeviceKeys("ES256"), "bundled");`,
        `console.log(JSON.stringify({ csr, facts: await readFacts({ agentVersion: "9.9.9" }), metrics: await new HostMetrics().sample(), yaml: YAML.stringify({ services: {} }) }));`,
      ].join("\n"),
    );
    const probe = await buildAgent({ entry, outDir: path.join(work, "probe") });
    expect(probe.inputs.some((input) => input.includes("node_modules/@peculiar/x509/"))).toBe(true);
    const run = spawnSync(process.execPath, [probe.bundlePath], { cwd: work, encoding: "utf8", timeout: 30_000 });
    // Node quotes the failing line of the one-line bundle: leave that out of the message
    expect(run.status, run.stderr.split("\n").filter((line) => line.length < 500).join("\n")).toBe(0);
    const { csr, facts, metrics, yaml } = JSON.parse(run.stdout);
    expect(yaml).toBe("services: {}\n");
    expect(csr).toMatch(/^-----BEGIN CERTIFICATE REQUEST-----/);
    expect(facts).toMatchObject({ agentVersion: "9.9.9", kernel: os.release(), memoryTotalBytes: os.totalmem() });
    expect(metrics.memoryTotalBytes).toBe(os.totalmem());
  });

  it("is refused when the agent would import the service's code (a value, not a type)", async () => {
    const entry = path.join(work, "imports-the-service.ts");
    writeFileSync(entry, `import * as service from ${JSON.stringify(path.join(REPO, "src/lib/plural.ts"))};\nconsole.log(service);\n`);
    const outDir = path.join(work, "refused");
    await expect(buildAgent({ entry, outDir })).rejects.toThrow(/server code[\s\S]*src\/lib\/plural\.ts/);
    expect(existsSync(path.join(outDir, "fleet-agent.mjs"))).toBe(false);
  });
});

describe("the tarball", () => {
  it("holds bin/, the bundle and the systemd unit, and a package.json with no dependencies", () => {
    expect(path.basename(built.tarballPath)).toMatch(/^fleet-agent-\d+\.\d+\.\d+.*\.tgz$/);
    const files = execFileSync("tar", ["-tzf", built.tarballPath], { encoding: "utf8" }).trim().split("\n").sort();
    expect(files).toEqual(["package/bin/fleet-agent.js", "package/dist/fleet-agent.mjs", "package/package.json", "package/systemd/fleet-agent.service"]);
    const manifest = JSON.parse(execFileSync("tar", ["-xzOf", built.tarballPath, "package/package.json"], { encoding: "utf8" }));
    expect(manifest).toMatchObject({ name: "fleet-agent", bin: { "fleet-agent": "bin/fleet-agent.js" } });
    expect(manifest.dependencies).toBeUndefined();
    expect(manifest.scripts).toBeUndefined();
  });

  it("installs with npm -g, offline and with an empty cache, into a working fleet-agent command", () => {
    const prefix = path.join(work, "prefix");
    execFileSync("npm", ["install", "-g", "--prefix", prefix, "--offline", "--cache", path.join(work, "npm-cache"), "--no-audit", "--no-fund", built.tarballPath], {
      cwd: work,
      encoding: "utf8",
      // what `npm test` may have set for this repository must not steer the install
      env: Object.fromEntries(Object.entries(process.env).filter(([key]) => !/^npm_/i.test(key))),
    });
    const installed = path.join(prefix, "lib", "node_modules", "fleet-agent");
    expect(existsSync(path.join(installed, "dist", "fleet-agent.mjs"))).toBe(true);
    expect(existsSync(path.join(installed, "node_modules")), "nothing was downloaded beside it").toBe(false);
    expectStarts(path.join(prefix, "bin", "fleet-agent"), []);
  });
});
