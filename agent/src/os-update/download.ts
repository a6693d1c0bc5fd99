// The bundle's download: resumable, checked by its digest before RAUC sees it.
//
// The bytes go to `<file>.part`; an interrupted download (a cut connection, kill -9, a power
// loss) goes on from the part's size with an HTTP Range request, and a server that answers the
// whole file instead (200 rather than 206) starts it over. Only a file whose sha256 is the one
// asked for is renamed to `<file>`. Redirects are followed (at most 5); TLS is checked against
// Node's trust store (NODE_EXTRA_CA_CERTS adds a private CA).
import crypto from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import https from "node:https";

export class DownloadError extends Error {
  override readonly name = "DownloadError";
  /** false: asking again cannot help (a digest mismatch, a 404) */
  constructor(message: string, readonly retryable: boolean) {
    super(message);
    this.stack = `${this.name}: ${message}`;
  }
}

const MAX_REDIRECTS = 5;

function hashOf(file: string): Promise<crypto.Hash> {
  const hash = crypto.createHash("sha256");
  return new Promise((resolve, reject) => {
    fs.createReadStream(file).on("data", (chunk) => hash.update(chunk)).on("end", () => resolve(hash)).on("error", reject);
  });
}

function get(url: string, headers: Record<string, string>, timeoutMs: number): Promise<http.IncomingMessage> {
  return new Promise((resolve, reject) => {
    const client = url.startsWith("https:") ? https : http;
    const req = client.get(url, { headers, timeout: timeoutMs }, resolve);
    req.on("timeout", () => req.destroy(new Error(`no answer from ${new URL(url).host} within ${Math.round(timeoutMs / 1000)} s`)));
    req.on("error", reject);
  });
}

export interface DownloadOptions {
  /** the idle time after which a connection counts as broken; default 60 s */
  timeoutMs?: number;
  /** headers of every request (asked anew for each, e.g. a token that expires) */
  headers?: () => Promise<Record<string, string>>;
  /** told the bytes written so far (progress, for the log) */
  onResume?: (offset: number) => void;
}

/**
 * Downloads `url` into `file` unless it is there already, going on from `<file>.part`; resolves
 * once `file` holds bytes whose sha256 is `sha256` (hex). Throws DownloadError.
 */
export async function downloadResumable(url: string, file: string, sha256: string, options: DownloadOptions = {}): Promise<void> {
  if (fs.existsSync(file)) {
    if ((await hashOf(file)).digest("hex") === sha256) return;
    fs.rmSync(file);
  }
  const part = `${file}.part`;
  let offset = fs.existsSync(part) ? fs.statSync(part).size : 0;
  const hash = offset ? await hashOf(part) : crypto.createHash("sha256");
  if (offset) options.onResume?.(offset);

  let target = url;
  let response: http.IncomingMessage;
  for (let hops = 0; ; hops++) {
    try {
      // the service's headers (its token) go to the service only, not to where it redirects
      const extra = options.headers && new URL(target).origin === new URL(url).origin ? await options.headers() : {};
      response = await get(target, { ...extra, ...(offset ? { range: `bytes=${offset}-` } : {}) }, options.timeoutMs ?? 60_000);
    } catch (error) {
      throw new DownloadError(`the bundle could not be fetched from ${new URL(target).host}: ${(error as Error).message}`, true);
    }
    const location = response.headers.location;
    if (response.statusCode && response.statusCode >= 300 && response.statusCode < 400 && location && hops < MAX_REDIRECTS) {
      response.resume();
      target = new URL(location, target).toString();
      continue;
    }
    break;
  }

  let fresh = false;
  if (response.statusCode === 416 && offset) {
    // the part is as long as the file (or longer): what it holds decides below
    response.resume();
  } else if (response.statusCode === 200) {
    fresh = true; // the whole file: the server ignored the range, or there was none
  } else if (response.statusCode !== 206) {
    response.resume();
    // a refused token of the service's is renewed for the next request
    const retryable = response.statusCode === undefined || response.statusCode >= 500 || response.statusCode === 429 || response.statusCode === 408 ||
      (response.statusCode === 401 && options.headers !== undefined);
    throw new DownloadError(`the bundle's server answered ${response.statusCode} for ${target}`, retryable);
  }

  if (response.statusCode === 200 || response.statusCode === 206) {
    // each chunk written as it arrives (flowing, no pipe): when the connection breaks, every byte
    // that came is in the part, and the next call asks for the rest
    const fd = fs.openSync(part, fresh ? "w" : "a", 0o600);
    const digest = fresh ? crypto.createHash("sha256") : hash;
    try {
      await new Promise<void>((resolve, reject) => {
        response.on("data", (chunk: Buffer) => {
          fs.writeSync(fd, chunk);
          digest.update(chunk);
        });
        response.on("error", reject);
        response.on("aborted", () => reject(new Error("the connection was cut")));
        response.on("end", () => (response.complete ? resolve() : reject(new Error("the connection was cut"))));
      });
    } catch (error) {
      throw new DownloadError(`the download of ${target} broke off at ${fs.fstatSync(fd).size} bytes (${(error as Error).message}); it goes on from there`, true);
    } finally {
      fs.fsyncSync(fd);
      fs.closeSync(fd);
    }
    return finish(part, file, digest.digest("hex"), sha256, target);
  }
  return finish(part, file, (await hashOf(part)).digest("hex"), sha256, target);
}

function finish(part: string, file: string, got: string, want: string, url: string): void {
  if (got !== want) {
    fs.rmSync(part, { force: true });
    throw new DownloadError(`the bundle does not match its digest: expected sha256:${want}, ${url} served sha256:${got}`, false);
  }
  fs.renameSync(part, file);
}
