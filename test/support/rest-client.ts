// A REST client for a service under test, as a third-party client calls it, recording what it
// sends and receives for the secret leak checks (secret-watch.ts). Kept apart from harness.ts,
// which loads the whole service in the test's process: the browser tests talk to a service
// process and need only this.
import type { SecretWatch } from "./secret-watch.js";

export interface ApiResponse<T = any> {
  status: number;
  body: T;
  headers: Headers;
  text: string;
}

export interface CallOptions {
  key?: string | null;
  token?: string;
  body?: unknown;
  headers?: Record<string, string>;
  /** raw body (sent as is with the given content type) */
  raw?: string;
}

/** Calls the REST API of a service at `baseUrl` the way a third-party client does; `defaultKey` goes in X-API-Key unless a call names another (or null). */
export function restClient(baseUrl: string, defaultKey: string | null, watch?: SecretWatch) {
  return async <T = any>(method: string, p: string, opts: CallOptions = {}): Promise<ApiResponse<T>> => {
    const headers: Record<string, string> = { ...(opts.headers ?? {}) };
    const key = opts.key === undefined ? defaultKey : opts.key;
    if (key) headers["x-api-key"] = key;
    if (opts.token) headers.authorization = `Bearer ${opts.token}`;
    let body: string | undefined;
    if (opts.raw !== undefined) body = opts.raw;
    else if (opts.body !== undefined) {
      body = JSON.stringify(opts.body);
      headers["content-type"] ??= "application/json";
    } else if (!["GET", "HEAD", "DELETE"].includes(method)) {
      body = "{}";
      headers["content-type"] ??= "application/json";
    }
    watch?.sent(`${method} ${p}`, opts.body, headers);
    const res = await fetch(baseUrl + p, { method, headers, body });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      /* not JSON: keep the text */
    }
    watch?.answered(`${method} ${p} -> ${res.status}`, text, res.headers, parsed);
    return { status: res.status, body: parsed as T, headers: res.headers, text };
  };
}
