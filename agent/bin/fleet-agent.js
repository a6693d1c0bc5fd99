#!/usr/bin/env node
// The agent's command. In a clone of the repository (the TypeScript sources are here) it runs
// them through tsx, which the clone's `npm install` brought, so what runs is what was just
// edited; an installed package (`npm run build:agent`, docs/agent.md) holds no sources, only
// the one bundled file dist/fleet-agent.mjs, and runs that.
import { existsSync } from "node:fs";
import { fileURLToPath, pathToFileURL } from "node:url";

const sources = new URL("../src/cli.ts", import.meta.url);
if (existsSync(fileURLToPath(sources))) {
  const { register } = await import("tsx/esm/api");
  register();
  await import(sources.href);
} else {
  await import(pathToFileURL(fileURLToPath(new URL("../dist/fleet-agent.mjs", import.meta.url))).href);
}
