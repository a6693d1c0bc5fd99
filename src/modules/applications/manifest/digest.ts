import { createHash } from "node:crypto";

/**
 * SHA-256 (hex) of the manifest text exactly as read; a known version whose digest changed
 * since the last sync counts as updated.
 */
export function manifestDigest(yamlText: string): string {
  return createHash("sha256").update(yamlText, "utf8").digest("hex");
}
