// Application icons: the image a manifest names (catalog icon), checked at import and stored
// in the database so that serving it needs no registry. Shared by the Git and OCI importers.
import { createHash } from "node:crypto";

export const MAX_ICON_BYTES = 256 * 1024;

export interface StoredIcon {
  data: Uint8Array;
  contentType: "image/png" | "image/svg+xml";
  sha256: string;
}

const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

/** The content type is read from the bytes, never from the file name. */
function sniff(data: Uint8Array): StoredIcon["contentType"] | null {
  if (data.length >= 8 && PNG_SIGNATURE.every((byte, i) => data[i] === byte)) return "image/png";
  const head = new TextDecoder("utf-8", { fatal: false }).decode(data.subarray(0, 4096)).replace(/^\uFEFF/, "").trimStart();
  if (/^(<\?xml[^>]*>\s*)?(<!--[\s\S]*?-->\s*)*(<!DOCTYPE svg[^>]*>\s*)?<svg[\s>]/i.test(head)) return "image/svg+xml";
  return null;
}

/** The icon to store, or the reason it is ignored (a warning on the version, never an error). */
export function checkIcon(data: Uint8Array): StoredIcon | { problem: string } {
  if (data.length > MAX_ICON_BYTES) return { problem: `it is larger than ${MAX_ICON_BYTES / 1024} KiB` };
  const contentType = sniff(data);
  if (!contentType) return { problem: "it is not a PNG or SVG image" };
  return { data, contentType, sha256: createHash("sha256").update(data).digest("hex") };
}
