// Where the CLI keeps its files: $XDG_CONFIG_HOME/fleet (default ~/.config/fleet). Kept apart
// from config.ts so that finding the directory does not load the YAML parser.
import os from "node:os";
import path from "node:path";

export function configDir(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_CONFIG_HOME || path.join(env.HOME || os.homedir(), ".config");
  return path.join(base, "fleet");
}
