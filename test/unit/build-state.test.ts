// The one staleness check of the three builds (scripts/build-state.mjs): the service's
// (dist/service, which `npm start` makes again first when it is stale), the CLI's and the web
// console's. A build is fresh until a file it was made from changes or goes; the service's
// build is fresh right after it is made (its list of inputs once held the name of the Prisma
// query compiler's stand-in, no file, so that every `npm start` rebuilt), and a change to a
// source makes it stale and the next start builds it again.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { buildState } from "../../scripts/build-state.mjs";
import { buildService, ensureServiceBuild, serviceBuildState } from "../../scripts/build-service.mjs";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const work = fs.mkdtempSync(path.join(os.tmpdir(), "fleet-build-state-"));
afterAll(() => fs.rmSync(work, { recursive: true, force: true }));

const HOUR = 3600_000;
/** Writes `file` with its modification time `at` (ms). */
function writeAt(file: string, at: number) {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, "x");
  fs.utimesSync(file, at / 1000, at / 1000);
}

describe("buildState", () => {
  const now = Date.now();
  const dir = path.join(work, "plain");
  const output = path.join(dir, "out", "main.js");
  const source = path.join(dir, "src");

  it("missing without its output; fresh while every input is older; stale once one is newer or gone", () => {
    writeAt(path.join(source, "a.ts"), now - 3 * HOUR);
    writeAt(path.join(source, "deep", "b.ts"), now - 3 * HOUR);
    const lock = path.join(dir, "package-lock.json");
    writeAt(lock, now - 3 * HOUR);
    expect(buildState(output, [source, lock])).toBe("missing");

    writeAt(output, now - 2 * HOUR);
    expect(buildState(output, [source, lock])).toBe("fresh");

    // a build or installed packages inside a source folder are not sources
    writeAt(path.join(source, "dist", "index.html"), now - HOUR);
    writeAt(path.join(source, "node_modules", "x", "index.js"), now - HOUR);
    expect(buildState(output, [source, lock])).toBe("fresh");

    writeAt(path.join(source, "deep", "b.ts"), now - HOUR);
    expect(buildState(output, [source, lock])).toBe("stale");
    writeAt(path.join(source, "deep", "b.ts"), now - 3 * HOUR);
    writeAt(lock, now - HOUR);
    expect(buildState(output, [source, lock])).toBe("stale");
    writeAt(lock, now - 3 * HOUR);
    expect(buildState(output, [source, lock])).toBe("fresh");
    expect(buildState(output, [source, lock, path.join(source, "removed.ts")])).toBe("stale");
  });
});

describe("the service's build", () => {
  const outdir = path.join(work, "service");

  it("is fresh right after it is made, so that a start does not build again; a newer source makes it stale and the next start builds", async () => {
    expect(serviceBuildState(outdir)).toBe("missing");
    await buildService(outdir);
    const inputs = JSON.parse(fs.readFileSync(path.join(outdir, "inputs.json"), "utf8")) as string[];
    // every input is a file (the stand-in of the query compiler is none)
    expect(inputs.filter((input) => !fs.existsSync(path.join(ROOT, input)))).toEqual([]);
    expect(inputs).toContain("src/main.ts");
    expect(serviceBuildState(outdir)).toBe("fresh");
    const said: string[] = [];
    await ensureServiceBuild((line) => said.push(line), outdir);
    expect(said).toEqual([]);

    // a source changed after the build (what a build made before that change amounts to)
    const entry = path.join(outdir, "main.js");
    const sourceTime = fs.statSync(path.join(ROOT, "src", "main.ts")).mtimeMs;
    fs.utimesSync(entry, (sourceTime - HOUR) / 1000, (sourceTime - HOUR) / 1000);
    expect(serviceBuildState(outdir)).toBe("stale");
    await ensureServiceBuild((line) => said.push(line), outdir);
    expect(said).toEqual([expect.stringContaining("dist/service is older than its sources")]);
    expect(serviceBuildState(outdir)).toBe("fresh");
  }, 120_000);
});
