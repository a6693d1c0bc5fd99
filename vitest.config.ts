import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    // web/src: the console's pure logic (parsing, chart data, buffers), next to its modules.
    include: ["test/**/*.test.ts", "web/src/**/*.test.ts"],
    globalSetup: ["test/support/global-setup.ts"],
    // One database per test file; PGlite holds ~450 MB, so two files at a time on 2 cores.
    pool: "forks",
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 120_000,
    reporters: process.env.VITEST_JSON_REPORT ? ["default", ["json", { outputFile: process.env.VITEST_JSON_REPORT }]] : ["default"],
  },
});
