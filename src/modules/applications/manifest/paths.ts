/**
 * Paths written inside a manifest (icon, description file) are relative to the manifest's
 * folder and may not leave the repository.
 */
import { posix } from "node:path";

/**
 * Resolves `relative` against the folder of `manifestPath` (both repository-relative, with
 * `/` separators) and returns the repository-relative result, e.g.
 * ("apps/vision/app.yaml", "./icon.png") -> "apps/vision/icon.png".
 * Returns null for absolute paths, Windows-style or NUL-bearing paths, and anything that
 * resolves outside the repository root or to the root itself.
 */
export function resolveManifestRelativePath(manifestPath: string, relative: string): string | null {
  if (!isPlainRelativePath(relative) || !isPlainRelativePath(manifestPath)) return null;
  const manifestFolder = posix.dirname(posix.normalize(manifestPath));
  const resolved = posix.normalize(posix.join(manifestFolder, relative));
  if (resolved === "." || resolved === ".." || resolved.startsWith("../")) return null;
  return resolved.replace(/\/+$/, "");
}

function isPlainRelativePath(path: string): boolean {
  return (
    path.trim() !== "" &&
    !path.startsWith("/") &&
    !path.includes("\\") && // a Windows separator or drive path ("C:\\x") never names a repository file
    !/^[a-zA-Z]:/.test(path) &&
    !path.includes("\0")
  );
}
