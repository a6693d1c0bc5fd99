// The operation manifest the commands are generated from: the one bundled with the CLI
// (cli/operations.json, written by `npm run openapi:snapshot` from the same document the service
// serves), or the one `fleet api sync` fetched from the server of the context in use.
import fs from "node:fs";
import path from "node:path";
import { configDir } from "./paths.js";
import type { Manifest } from "./manifest.js";

/** cli/operations.json, from cli/src/ (tsx) and from cli/dist/ (the bundle) alike. */
export const BUNDLED_MANIFEST = new URL("../operations.json", import.meta.url);

/** Where `fleet api sync` keeps a server's manifest. */
export function syncedManifestPath(server: string, env: NodeJS.ProcessEnv = process.env): string {
  const safe = server.replace(/^https?:\/\//, "").replace(/[^A-Za-z0-9.-]+/g, "_");
  return path.join(configDir(env), "operations", `${safe}.json`);
}

/** The server of the context a command line will use, read cheaply (no YAML parser for --help). */
function currentServer(env: NodeJS.ProcessEnv): string | null {
  if (env.FLEET_URL) return env.FLEET_URL.replace(/\/+$/, "");
  const dir = path.join(configDir(env), "operations");
  if (!fs.existsSync(dir)) return null;
  try {
    const text = fs.readFileSync(path.join(configDir(env), "config.yaml"), "utf8");
    const current = /^currentContext:\s*(.+)$/m.exec(text)?.[1]?.trim().replace(/^["']|["']$/g, "");
    if (!current) return null;
    const block = text.slice(text.indexOf(`\n  ${current}:`));
    return /server:\s*(\S+)/.exec(block)?.[1]?.replace(/^["']|["']$/g, "") ?? null;
  } catch {
    return null;
  }
}

export function loadManifest(env: NodeJS.ProcessEnv = process.env): Manifest {
  const server = currentServer(env);
  const synced = server ? syncedManifestPath(server, env) : null;
  const file = synced && fs.existsSync(synced) ? synced : BUNDLED_MANIFEST;
  return JSON.parse(fs.readFileSync(file, "utf8")) as Manifest;
}
