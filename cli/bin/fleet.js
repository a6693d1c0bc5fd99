#!/usr/bin/env node
// The `fleet` command. It runs cli/dist/main.js, the bundle cli/build.mjs makes of cli/src (a
// command's code is loaded only when that command runs: `fleet --help` answers in ~100 ms,
// docs/cli.md). In a clone the bundle is rebuilt first whenever a source is newer than it, so
// what runs is what was just edited; without esbuild it falls back to the sources through tsx.
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

// Output into a pipe whose reader is gone (`fleet --help | head`, head has exited): Node ignores
// SIGPIPE, so the write fails with EPIPE, reported as an 'error' event that, unhandled, ends
// the process with a stack trace. It ends quietly instead, with the status of a Unix tool that
// SIGPIPE killed (128 + 13), as `ls | head` has: what it would still write has no reader.
const SIGPIPE_STATUS = 141;
for (const stream of [process.stdout, process.stderr]) {
  stream.on("error", (err) => {
    if (err.code === "EPIPE") process.exit(SIGPIPE_STATUS);
    throw err;
  });
}

const dist = new URL("../dist/main.js", import.meta.url);
let entry = dist;
if (existsSync(fileURLToPath(new URL("../src/main.ts", import.meta.url)))) {
  const builder = await import("../build.mjs");
  if (!builder.isFresh()) {
    try {
      await builder.buildCli();
    } catch {
      const { register } = await import("tsx/esm/api");
      register();
      entry = new URL("../src/main.ts", import.meta.url);
    }
  }
}
const { main } = await import(entry.href);
process.exitCode = await main(process.argv.slice(2));
