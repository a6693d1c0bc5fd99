// `npm run simulate -- --help` (scripts/simulate.ts, run as npm runs it) prints the usage on
// stdout and succeeds, with no complaint about an unknown option; a missing option still
// fails with the usage on stderr.
import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { USAGE } from "../../../src/simulator/cli.js";
import { ROOT } from "../../support/server-process.js";

const simulate = (args: string[]) =>
  spawnSync(process.execPath, ["--import", "tsx", "scripts/simulate.ts", ...args], { cwd: ROOT, encoding: "utf8", timeout: 60_000 });

describe("npm run simulate", () => {
  it("--help and -h print the usage and succeed", () => {
    for (const flag of ["--help", "-h"]) {
      const run = simulate([flag]);
      expect(run.stderr).toBe("");
      expect(run.stdout).toBe(USAGE + "\n");
      expect(run.status).toBe(0);
    }
  }, 120_000);

  it("without --url and --token it fails with the usage", () => {
    const run = simulate(["--devices", "3"]);
    expect(run.status).toBe(2);
    expect(run.stderr).toBe(USAGE + "\n");
    expect(run.stdout).toBe("");
  }, 60_000);
});
