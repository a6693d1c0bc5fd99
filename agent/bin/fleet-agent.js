#!/usr/bin/env node
// The agent's command. On a device it runs the one bundled file `dist/fleet-agent.mjs` (`npm run
// build:agent`, docs/agent.md); in a clone without that build it runs the TypeScript sources
// through tsx, which the clone's `npm install` brought.
import { existsSync } from "node:fs";
import { fileURLToPath, pathToFileURL } from "node:url";

const bundle = fileURLToPath(new URL("../dist/fleet-agent.mjs", import.meta.url));
if (existsSync(bundle)) {
  await import(pathToFileURL(bundle).href);
} else {
  const { register } = await import("tsx/esm/api");
  register();
  await import(new URL("../src/cli.ts", import.meta.url).href);
}
