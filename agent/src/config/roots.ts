// Where the configuration the service hands over may be written (docs/configuration.md, "On the
// device"): only under the allowed roots, which the device's own settings name, never the
// service. A path is taken as written: one with "." or ".." segments, doubled slashes or a NUL
// is refused rather than normalized (normalizing "/etc/fleet/../passwd" would turn a refusal
// into a write elsewhere), and a symbolic link on the way out of a root is refused too.
import fs from "node:fs";
import path from "node:path";

/** The roots from FLEET_AGENT_CONFIG_ROOTS (colon-separated), else /etc/fleet/ and the state directory's files/. */
export function configRootsFromEnv(stateDir: string, env: NodeJS.ProcessEnv = process.env): string[] {
  const named = (env.FLEET_AGENT_CONFIG_ROOTS ?? "").split(":").map((r) => r.trim()).filter(Boolean);
  return (named.length ? named : ["/etc/fleet/", stateFilesRoot(stateDir)]).map(asRoot);
}

/**
 * The part of the state directory configuration may use: its files/ sub-directory. The rest
 * of it is the agent's own (its key, certificate, journal): a configuration file there could
 * replace the device's identity.
 */
export function stateFilesRoot(stateDir: string): string {
  return asRoot(path.join(path.resolve(stateDir), "files"));
}

function asRoot(root: string): string {
  if (!path.isAbsolute(root)) throw new Error(`configuration root ${root} is not an absolute path (FLEET_AGENT_CONFIG_ROOTS)`);
  const normal = path.posix.normalize(root);
  return normal.endsWith("/") ? normal : `${normal}/`;
}

export class PathRefused extends Error {
  override readonly name = "PathRefused";
}

/** Refuses (PathRefused, naming the path) a path outside the roots or one that is not a plain absolute path. */
export function checkPath(file: string, roots: readonly string[]): void {
  if (typeof file !== "string" || !file.startsWith("/")) throw new PathRefused(`${JSON.stringify(file)} is not an absolute path`);
  if (file.includes("\0")) throw new PathRefused(`${JSON.stringify(file)} holds a NUL character`);
  const segments = file.slice(1).split("/");
  if (segments.some((s) => s === "" || s === "." || s === "..")) {
    throw new PathRefused(`${file} is refused: a path with empty, "." or ".." segments (no traversal)`);
  }
  const root = roots.find((r) => file.startsWith(r));
  if (!root) throw new PathRefused(`${file} is outside the allowed roots (${roots.join(", ")}; FLEET_AGENT_CONFIG_ROOTS)`);
  // A link inside the root leading elsewhere would make a write land outside it.
  let at = root.slice(0, -1);
  for (const segment of file.slice(root.length).split("/")) {
    at = `${at}/${segment}`;
    let stat: fs.Stats;
    try {
      stat = fs.lstatSync(at);
    } catch {
      return; // the rest is made by the write, as directories
    }
    if (stat.isSymbolicLink()) throw new PathRefused(`${file} is refused: ${at} is a symbolic link`);
    if (at !== file && !stat.isDirectory()) throw new PathRefused(`${file} is refused: ${at} is not a directory`);
    if (at === file && !stat.isFile()) throw new PathRefused(`${file} is refused: it exists and is not a regular file`);
  }
}
