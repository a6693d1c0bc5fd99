// Fetching a registry's branch with isomorphic-git over smart HTTP: a shallow, single-branch
// fetch into a bare cache under DATA_DIR/git-cache/<registry id>, reused between syncs and
// rebuilt when it is unusable. Every request passes the outbound address policy, one
// deadline and one byte budget.
import fs from "node:fs";
import path from "node:path";
import type { HttpClient } from "isomorphic-git";
import { ByteBudget, createOutboundClient, ResponseTooLarge } from "../../../lib/outbound-http.js";
import { OutboundRefused, type OutboundPolicy } from "../../../lib/outbound.js";
import type { Logger } from "../../../lib/logger.js";
import { isomorphicGit } from "../../../lib/on-first-use.js";

export interface FetchOptions {
  cacheDir: string;
  url: string;
  branch: string;
  /** Authorization header value, sent with every request to the repository's origin */
  authorization?: string;
  policy: OutboundPolicy;
  timeoutMs: number;
  maxBytes: number;
  logger: Logger;
}

/** A fetch that failed for a reason the registry's owner can act on; `message` is safe to show. */
export class GitFetchError extends Error {
  override readonly name = "GitFetchError";
}

const MARKER = "fleet-source.json";
/** Each fetch that brings something new adds a pack; past this many the cache is rebuilt. */
const MAX_PACKS = 25;

export function cacheDirFor(dataDir: string, registryId: string): string {
  return path.resolve(dataDir, "git-cache", registryId);
}

export async function removeCache(cacheDir: string): Promise<void> {
  await fs.promises.rm(cacheDir, { recursive: true, force: true });
}

/**
 * Fetches the branch tip and hands its commit id to `read` (which reads objects from
 * `cacheDir`). When either step fails because of the cache itself, not the remote, the cache
 * is rebuilt from scratch and both run once more.
 */
export async function fetchAndRead<T>(options: FetchOptions, read: (commit: string) => Promise<T>): Promise<{ commit: string; value: T }> {
  const attempt = async () => {
    const commit = await fetchOnce(options);
    return { commit, value: await read(commit) };
  };
  const reused = await prepareCache(options);
  try {
    return await attempt();
  } catch (err) {
    if (!reused || isRemoteFailure(err, options.branch)) throw describeFetchError(err, options);
    options.logger.warn({ cacheDir: options.cacheDir, err: errorSummary(err) }, "git cache unusable; rebuilding it");
    await removeCache(options.cacheDir);
    await prepareCache(options);
    try {
      return await attempt();
    } catch (retryErr) {
      throw describeFetchError(retryErr, options);
    }
  }
}

/** Creates the cache when missing or not for this URL and branch; true when an existing one is reused. */
async function prepareCache({ cacheDir, url, branch }: FetchOptions): Promise<boolean> {
  const wanted = JSON.stringify({ url, branch });
  const marker = await fs.promises.readFile(path.join(cacheDir, MARKER), "utf8").catch(() => null);
  if (marker === wanted && (await packCount(cacheDir)) <= MAX_PACKS) return true;
  await removeCache(cacheDir);
  await fs.promises.mkdir(cacheDir, { recursive: true });
  const git = await isomorphicGit();
  await git.init({ fs, gitdir: cacheDir, bare: true, defaultBranch: branch });
  await git.addRemote({ fs, gitdir: cacheDir, remote: "origin", url, force: true });
  // Written last: a cache interrupted while being created has no marker and is rebuilt.
  await fs.promises.writeFile(path.join(cacheDir, MARKER), wanted);
  return false;
}

async function packCount(cacheDir: string): Promise<number> {
  const files = await fs.promises.readdir(path.join(cacheDir, "objects", "pack")).catch(() => []);
  return files.filter((file) => file.endsWith(".pack")).length;
}

async function fetchOnce(options: FetchOptions): Promise<string> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new FetchTimeout(options.timeoutMs)), options.timeoutMs);
  try {
    const client = createOutboundClient({
      policy: options.policy,
      signal: controller.signal,
      budget: new ByteBudget(options.maxBytes),
      userAgent: "fleet-manager-git-sync",
    });
    const http: HttpClient = {
      request: async ({ url, method, headers, body }) => {
        const res = await client.request({ url, method, headers, body: body as AsyncIterable<Uint8Array> | undefined });
        return { url: res.url, method, statusCode: res.status, statusMessage: res.statusMessage, headers: res.headers, body: res.body };
      },
    };
    const git = await isomorphicGit();
    const result = await git.fetch({
      fs,
      http,
      gitdir: options.cacheDir,
      remote: "origin",
      ref: options.branch,
      remoteRef: options.branch,
      singleBranch: true,
      depth: 1,
      tags: false,
      headers: options.authorization ? { authorization: options.authorization } : {},
    });
    if (!result.fetchHead) throw new GitFetchError(`branch "${options.branch}" not found in the repository`);
    return result.fetchHead;
  } catch (err) {
    // An abort surfaces as whatever the interrupted stream threw; report the deadline itself.
    if (controller.signal.aborted) throw controller.signal.reason;
    throw err;
  } finally {
    clearTimeout(timer);
  }
}

class FetchTimeout extends Error {
  override readonly name = "FetchTimeout";
  constructor(readonly timeoutMs: number) {
    super(`the fetch did not finish within ${Math.round(timeoutMs / 1000)} s`);
  }
}

const NETWORK_CODES: Record<string, string> = {
  ECONNREFUSED: "connection refused",
  ECONNRESET: "connection reset",
  ENOTFOUND: "host not found",
  EAI_AGAIN: "host name lookup failed",
  ETIMEDOUT: "connection timed out",
  EHOSTUNREACH: "host unreachable",
  ENETUNREACH: "network unreachable",
  EPIPE: "connection closed",
  UND_ERR_SOCKET: "connection closed",
};

type ErrorLike = Error & { code?: string; data?: { statusCode?: number; statusMessage?: string; what?: string } };

/** Failures caused by the remote side, the network or our limits: a new cache would not help. */
function isRemoteFailure(err: unknown, branch: string): boolean {
  const e = err as ErrorLike;
  return (
    err instanceof GitFetchError || err instanceof OutboundRefused || err instanceof ResponseTooLarge || err instanceof FetchTimeout ||
    e?.name === "TimeoutError" ||
    e?.code === "HttpError" || e?.code === "SmartHttpError" || e?.code === "UnknownTransportError" || e?.code === "RemoteCapabilityError" ||
    (e?.code !== undefined && (e.code in NETWORK_CODES || e.code.startsWith("CERT_") || e.code.startsWith("ERR_TLS") || e.code.includes("SSL"))) ||
    isMissingBranch(e, branch)
  );
}

/** isomorphic-git names the ref it could not find on the remote; other NotFoundErrors are local. */
function isMissingBranch(e: ErrorLike, branch: string): boolean {
  return e?.code === "NotFoundError" && (e.data?.what === branch || e.data?.what === `refs/heads/${branch}`);
}

/** A GitFetchError whose message tells the registry's owner what went wrong, without secrets or local paths. */
export function describeFetchError(err: unknown, options: Pick<FetchOptions, "url" | "branch" | "maxBytes" | "logger">): GitFetchError {
  if (err instanceof GitFetchError) return err;
  const e = err as ErrorLike;
  const host = safeHost(options.url);
  let message: string;
  if (err instanceof OutboundRefused || err instanceof FetchTimeout) message = err.message;
  else if (e?.name === "TimeoutError") message = "reading the repository took longer than the sync timeout";
  else if (err instanceof ResponseTooLarge) message = `the repository download exceeded the limit of ${formatBytes(options.maxBytes)}`;
  else if (e?.code === "HttpError") {
    const status = e.data?.statusCode ?? 0;
    message = status === 401 || status === 403
      ? `authentication failed (HTTP ${status}): check the registry's credentials`
      : status === 404
        ? `repository not found (HTTP 404)`
        : `the Git server answered HTTP ${status}${e.data?.statusMessage ? ` ${e.data.statusMessage}` : ""}`;
  } else if (isMissingBranch(e, options.branch)) message = `branch "${options.branch}" not found in the repository`;
  else if (e?.code && e.code in NETWORK_CODES) message = `cannot reach ${host}: ${NETWORK_CODES[e.code]}`;
  else if (e?.code && (e.code.startsWith("CERT_") || e.code.startsWith("ERR_TLS") || e.code.includes("SSL"))) message = `TLS connection to ${host} failed (${e.code})`;
  else if (e?.code === "SmartHttpError" || e?.code === "UnknownTransportError" || e?.code === "RemoteCapabilityError") {
    message = `${host} does not speak the Git smart HTTP protocol as expected`;
  } else {
    options.logger.warn({ err: errorSummary(err) }, "git fetch failed");
    message = `the Git fetch failed (${e?.code ?? e?.name ?? "unknown error"})`;
  }
  return new GitFetchError(message);
}

function formatBytes(bytes: number): string {
  return bytes >= 1048576 ? `${Math.round(bytes / 1048576)} MiB` : `${Math.round(bytes / 1024)} KiB`;
}

function safeHost(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return "the repository";
  }
}

function errorSummary(err: unknown) {
  const e = err as ErrorLike;
  return { name: e?.name, code: e?.code, message: e?.message };
}
