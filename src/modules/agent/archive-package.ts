// A component package given as `repository: https://...`: a gzip-compressed tar archive
// (`.tar.gz`) holding the compose file at its top (compose.yaml, compose.yml,
// docker-compose.yaml or docker-compose.yml; a single top folder is looked into too, as
// `tar czf app.tar.gz app/` writes it). The service fetches it through the outbound address
// policy, as it reads OCI packages, so a device needs no outbound access of its own; when the
// manifest gives the archive's `digest` (sha256:<hex>), the bytes must match it.
//
// The reader is this file's own (regular files of ustar, with the pax and GNU long names): the
// archive is read in memory under a cap, and only the compose file's bytes are kept.
import { gunzipSync } from "node:zlib";
import { ByteBudget, createOutboundClient, ResponseTooLarge } from "../../lib/outbound-http.js";
import { outboundPolicyOf } from "../../lib/outbound.js";
import type { Services } from "../../services.js";
import { sha256 } from "../registries/oci/sync.js";

/** the archive as fetched */
export const MAX_ARCHIVE_BYTES = 16 * 1024 * 1024;
/** the archive once uncompressed */
const MAX_TAR_BYTES = 64 * 1024 * 1024;
export const COMPOSE_FILE_NAMES = ["compose.yaml", "compose.yml", "docker-compose.yaml", "docker-compose.yml"];

/** What makes an archive unusable (answered 422), or the place that does not hold it (404). */
export class ArchiveError extends Error {
  constructor(message: string, readonly status: 404 | 422 | 503 = 422) {
    super(message);
  }
}

/** The regular files of a tar archive: path -> bytes (pax `path` and GNU long names honoured). */
export function tarFiles(tar: Buffer): Map<string, Buffer> {
  const files = new Map<string, Buffer>();
  let offset = 0;
  let longName: string | null = null;
  while (offset + 512 <= tar.length) {
    const header = tar.subarray(offset, offset + 512);
    if (header.every((b) => b === 0)) break;
    const text = (start: number, length: number) => {
      const field = header.subarray(start, start + length);
      const end = field.indexOf(0);
      return field.subarray(0, end < 0 ? length : end).toString("utf8");
    };
    const declared = header.reduce((sum, b, i) => sum + (i >= 148 && i < 156 ? 32 : b), 0);
    if (Number.parseInt(text(148, 8).trim(), 8) !== declared) throw new ArchiveError("it is not a tar archive (a header's checksum does not match)");
    const size = Number.parseInt(text(124, 12).trim() || "0", 8);
    const type = text(156, 1) || "0";
    const prefix = header.subarray(257, 263).toString("latin1").startsWith("ustar") ? text(345, 155) : "";
    const body = tar.subarray(offset + 512, offset + 512 + size);
    if (body.length < size) throw new ArchiveError("the tar archive is cut short");
    offset += 512 + Math.ceil(size / 512) * 512;
    if (type === "x") {
      // pax extended header: "<len> key=value\n" records; only path matters here
      const path = /(?:^|\n)\d+ path=([^\n]*)\n/.exec(body.toString("utf8"));
      if (path) longName = path[1];
      continue;
    }
    if (type === "L") {
      longName = body.toString("utf8").replace(/\0+$/, "");
      continue;
    }
    const name = longName ?? (prefix ? `${prefix}/${text(0, 100)}` : text(0, 100));
    longName = null;
    if (type === "0" || type === "7") files.set(name.replace(/^(\.\/)+/, ""), Buffer.from(body));
  }
  return files;
}

/** The compose file of a .tar.gz archive: its name in the archive and its bytes. */
export function composeFromArchive(archive: Buffer): { name: string; content: Buffer } {
  if (archive[0] !== 0x1f || archive[1] !== 0x8b) throw new ArchiveError("it is not a gzip-compressed tar archive (.tar.gz)");
  let tar: Buffer;
  try {
    tar = gunzipSync(archive, { maxOutputLength: MAX_TAR_BYTES });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new ArchiveError(code === "ERR_BUFFER_TOO_LARGE" ? `it holds more than ${MAX_TAR_BYTES / 1024 / 1024} MiB uncompressed` : "its gzip data is damaged");
  }
  const files = tarFiles(tar);
  const top = new Set([...files.keys()].map((name) => name.split("/")[0]));
  const folder = top.size === 1 && ![...files.keys()].some((name) => !name.includes("/")) ? `${[...top][0]}/` : "";
  for (const candidate of COMPOSE_FILE_NAMES) {
    const content = files.get(folder + candidate);
    if (content) return { name: folder + candidate, content };
  }
  throw new ArchiveError(`it holds no compose file (${COMPOSE_FILE_NAMES.join(", ")}) at its top`);
}

/**
 * Fetches the archive at `url` through the outbound address policy (redirects followed, at
 * most MAX_ARCHIVE_BYTES) and checks it against `digest` when the manifest gives one.
 */
export async function fetchArchive(services: Services, url: string, digest: string | undefined, signal: AbortSignal): Promise<{ archive: Buffer; archiveDigest: string }> {
  const client = createOutboundClient({
    policy: outboundPolicyOf(services.config), signal, budget: new ByteBudget(MAX_ARCHIVE_BYTES), userAgent: "fleet-manager",
  });
  const res = await client.request({ url, headers: { accept: "application/gzip, application/x-gzip, application/octet-stream, */*" } });
  if (res.status === 404 || res.status === 410) {
    for await (const _ of res.body) { /* drain */ }
    throw new ArchiveError(`${url} answered ${res.status}`, 404);
  }
  const chunks: Buffer[] = [];
  try {
    for await (const chunk of res.body) chunks.push(Buffer.from(chunk));
  } catch (err) {
    if (err instanceof ResponseTooLarge) throw new ArchiveError(`the archive is larger than ${MAX_ARCHIVE_BYTES / 1024 / 1024} MiB`);
    throw err;
  }
  if (res.status < 200 || res.status >= 300) throw new ArchiveError(`${url} answered ${res.status} ${res.statusMessage}`.trim(), 503);
  const archive = Buffer.concat(chunks);
  const archiveDigest = sha256(archive);
  if (digest && archiveDigest !== digest) {
    throw new ArchiveError(`the archive does not match the manifest's digest: the manifest says ${digest}, ${url} served ${archiveDigest}`);
  }
  return { archive, archiveDigest };
}
