// What a drift report says of each file changed by hand (docs/configuration.md, "Drift"): its
// digest, and its content (base64) while it is small enough for the service to take it as a
// device override ("accept"). The content is read when the report goes out and only when the
// file still has the digest the drift check found (a file edited again since then waits for
// the next check); it is never written to the agent's state.
import crypto from "node:crypto";
import fs from "node:fs";
import type { DriftEntry } from "./types.js";

/** The service's limit of one layer file (LIMITS.fileBytes): a larger file cannot be accepted. */
export const DRIFT_CONTENT_MAX_BYTES = 128 * 1024;
/** All contents of one report together (decoded): the heartbeat's body stays well under its 1 MiB limit. */
export const DRIFT_REPORT_MAX_BYTES = 512 * 1024;

function readSmall(file: string, max: number): Buffer | null {
  try {
    const stat = fs.lstatSync(file);
    if (!stat.isFile() || stat.size > max) return null;
    const data = fs.readFileSync(file);
    return data.length <= max ? data : null;
  } catch {
    return null;
  }
}

/** The entries with `contentBase64` for each changed file that fits (per file and in total), in order. */
export function withDriftContent(entries: DriftEntry[], budget = DRIFT_REPORT_MAX_BYTES): DriftEntry[] {
  let left = budget;
  return entries.map((entry) => {
    if (!entry.sha256) return entry; // removed: nothing to accept
    const data = readSmall(entry.path, Math.min(DRIFT_CONTENT_MAX_BYTES, left));
    if (!data || crypto.createHash("sha256").update(data).digest("hex") !== entry.sha256) return entry;
    left -= data.length;
    return { ...entry, contentBase64: data.toString("base64") };
  });
}
