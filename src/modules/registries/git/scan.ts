// Reading a fetched commit: the manifests below the registry's path (app.yaml, margo.yaml)
// and the icons they name. Reads objects straight from the cache; nothing is checked out.
import fs from "node:fs";
import { isomorphicGit } from "../../../lib/on-first-use.js";
import { checkIcon, type StoredIcon } from "../../applications/icons.js";
import { manifestDigest, MAX_MANIFEST_BYTES, parseManifest, resolveManifestRelativePath } from "../../applications/manifest/index.js";
import type { IngestItem } from "../../applications/ingest.js";
import { GitFetchError } from "./repository.js";

export const MANIFEST_FILE_NAMES = new Set(["app.yaml", "margo.yaml"]);
/** Tree entries visited per scan: a bound for repositories far larger than a catalog. */
const MAX_TREE_ENTRIES = 200_000;

export interface ScanResult {
  /** manifests that passed the manifest-level checks (admitted or rejected) */
  found: number;
  admitted: IngestItem[];
  rejected: Array<{ path: string; reason: string }>;
  errors: string[];
}

interface Commit {
  gitdir: string;
  oid: string;
}

/**
 * Repository-relative manifest paths below `registryPath` ("/" or "/apps"), in tree order;
 * `wanted` picks other files by name (config sources read every YAML file).
 */
export async function findManifests(
  commit: Commit, registryPath: string, wanted: (name: string) => boolean = (name) => MANIFEST_FILE_NAMES.has(name),
): Promise<Array<{ path: string; oid: string }>> {
  const root = registryPath.replace(/^\/+/, "");
  const found: Array<{ path: string; oid: string }> = [];
  let visited = 0;
  const git = await isomorphicGit();
  const walk = async (folder: string) => {
    let tree;
    try {
      tree = await git.readTree({ fs, gitdir: commit.gitdir, oid: commit.oid, ...(folder ? { filepath: folder } : {}) });
    } catch (err) {
      if ((err as { code?: string }).code === "NotFoundError" && folder === root) {
        throw new GitFetchError(`path /${root} does not exist in the repository`);
      }
      throw err;
    }
    for (const entry of tree.tree) {
      if ((visited += 1) > MAX_TREE_ENTRIES) throw new GitFetchError(`the repository has more than ${MAX_TREE_ENTRIES} files and folders below the path`);
      const entryPath = folder ? `${folder}/${entry.path}` : entry.path;
      if (entry.type === "tree") await walk(entryPath);
      else if (entry.type === "blob" && wanted(entry.path)) found.push({ path: entryPath, oid: entry.oid });
      // "commit" entries are submodules: not part of this repository.
    }
  };
  await walk(root);
  return found;
}

/** Reads and parses every manifest; icons are read for the admitted ones. */
export async function scanCommit(commit: Commit, registryPath: string, signal?: AbortSignal): Promise<ScanResult> {
  const result: ScanResult = { found: 0, admitted: [], rejected: [], errors: [] };
  const git = await isomorphicGit();
  for (const file of await findManifests(commit, registryPath)) {
    signal?.throwIfAborted();
    const { blob } = await git.readBlob({ fs, gitdir: commit.gitdir, oid: file.oid });
    if (blob.length > MAX_MANIFEST_BYTES) {
      result.errors.push(`${file.path}: the manifest is larger than ${MAX_MANIFEST_BYTES / 1024} KiB`);
      continue;
    }
    let text: string;
    try {
      text = new TextDecoder("utf-8", { fatal: true }).decode(blob);
    } catch {
      result.errors.push(`${file.path}: the manifest is not UTF-8 text`);
      continue;
    }
    const parsed = parseManifest(text, file.path);
    if (parsed.kind === "error") {
      result.errors.push(`${file.path}: ${parsed.message}`);
      continue;
    }
    result.found += 1;
    if (parsed.kind === "rejected") {
      result.rejected.push({ path: parsed.path, reason: parsed.reason });
      continue;
    }
    const warnings = [...parsed.warnings];
    const icon = parsed.manifest.iconPath ? await readIcon(commit, file.path, parsed.manifest.iconPath, warnings) : null;
    result.admitted.push({ path: file.path, manifest: parsed.manifest, warnings, digest: manifestDigest(text), icon });
  }
  return result;
}

/** The icon a manifest names; a missing or unusable one is a warning on the version. */
async function readIcon(commit: Commit, manifestPath: string, iconPath: string, warnings: string[]): Promise<StoredIcon | null> {
  const resolved = resolveManifestRelativePath(manifestPath, iconPath);
  if (!resolved) {
    warnings.push(`icon ignored: ${iconPath} leaves the repository`);
    return null;
  }
  let data: Uint8Array;
  const git = await isomorphicGit();
  try {
    ({ blob: data } = await git.readBlob({ fs, gitdir: commit.gitdir, oid: commit.oid, filepath: resolved }));
  } catch {
    warnings.push(`icon ignored: ${iconPath} is not a file in the repository`);
    return null;
  }
  const icon = checkIcon(data);
  if ("problem" in icon) {
    warnings.push(`icon ignored: ${iconPath}: ${icon.problem}`);
    return null;
  }
  return icon;
}
