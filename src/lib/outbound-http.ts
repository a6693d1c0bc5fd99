// HTTP(S) requests to tenant-named hosts (Git and OCI registries, webhooks), always through
// the outbound address policy, with a deadline and a cap on the bytes received.
import http from "node:http";
import https from "node:https";
import { Readable } from "node:stream";
import { assertUrlAllowed, guardedLookup, type OutboundPolicy } from "./outbound.js";
import { inOutboundSpan } from "./tracing/index.js";

export class ResponseTooLarge extends Error {
  override readonly name = "ResponseTooLarge";
  constructor(readonly limitBytes: number) {
    super(`the response exceeded the limit of ${limitBytes} bytes`);
  }
}

/** A byte allowance shared by every response of one client (e.g. one registry sync). */
export class ByteBudget {
  used = 0;
  constructor(readonly limit: number) {}

  take(bytes: number) {
    this.used += bytes;
    if (this.used > this.limit) throw new ResponseTooLarge(this.limit);
  }
}

export interface OutboundClientOptions {
  policy: OutboundPolicy;
  /** aborts every request of this client (a caller's deadline) */
  signal?: AbortSignal;
  /** caps the bytes received over all responses of this client */
  budget?: ByteBudget;
  /** redirects followed for GET and HEAD (default 5) */
  maxRedirects?: number;
  userAgent?: string;
  /** false skips TLS certificate verification (a registry configured with verifyTls: false) */
  verifyTls?: boolean;
}

export interface OutboundRequest {
  url: string;
  method?: string;
  headers?: Record<string, string>;
  body?: Uint8Array | string | Iterable<Uint8Array> | AsyncIterable<Uint8Array>;
}

export interface OutboundResponse {
  /** the URL that answered, after redirects */
  url: string;
  status: number;
  statusMessage: string;
  headers: Record<string, string>;
  /** the body as it arrives; reading it counts against the budget */
  body: AsyncIterableIterator<Uint8Array>;
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

async function collectBody(body: OutboundRequest["body"]): Promise<Buffer | undefined> {
  if (body === undefined) return undefined;
  if (typeof body === "string" || body instanceof Uint8Array) return Buffer.from(body);
  const chunks: Uint8Array[] = [];
  for await (const chunk of body as AsyncIterable<Uint8Array>) chunks.push(chunk);
  return Buffer.concat(chunks);
}

async function* counted(stream: Readable, budget: ByteBudget | undefined): AsyncIterableIterator<Uint8Array> {
  try {
    for await (const chunk of stream) {
      budget?.take((chunk as Buffer).length);
      yield chunk as Uint8Array;
    }
  } finally {
    stream.destroy();
  }
}

function send(url: URL, method: string, headers: Record<string, string>, body: Buffer | undefined, options: OutboundClientOptions) {
  const transport = url.protocol === "https:" ? https : http;
  return new Promise<http.IncomingMessage>((resolve, reject) => {
    const req = transport.request(url, {
      method,
      headers: body ? { ...headers, "content-length": String(body.length) } : headers,
      lookup: guardedLookup(options.policy) as never,
      signal: options.signal,
      agent: false,
      ...(options.verifyTls === false ? { rejectUnauthorized: false } : {}),
    });
    req.once("response", resolve);
    req.once("error", reject);
    req.end(body);
  });
}

export function createOutboundClient(options: OutboundClientOptions) {
  const maxRedirects = options.maxRedirects ?? 5;

  async function request(req: OutboundRequest): Promise<OutboundResponse> {
    const method = (req.method ?? "GET").toUpperCase();
    let url = assertUrlAllowed(req.url, options.policy);
    const headers: Record<string, string> = { ...(req.headers ?? {}) };
    if (options.userAgent && !Object.keys(headers).some((h) => h.toLowerCase() === "user-agent")) headers["user-agent"] = options.userAgent;
    const body = await collectBody(req.body);
    for (let hop = 0; ; hop++) {
      options.signal?.throwIfAborted();
      // A client span per hop when tracing is on (traceparent added to the headers).
      const res = await inOutboundSpan(method, url, headers, () => send(url, method, headers, body, options));
      const location = res.headers.location;
      if (REDIRECTS.has(res.statusCode ?? 0) && location && (method === "GET" || method === "HEAD") && hop < maxRedirects) {
        res.resume();
        const next = assertUrlAllowed(new URL(location, url), options.policy);
        // Credentials are for the origin they were given for, never for where it redirects.
        if (next.origin !== url.origin) {
          for (const name of Object.keys(headers)) if (/^(authorization|cookie)$/i.test(name)) delete headers[name];
        }
        url = next;
        continue;
      }
      const flat: Record<string, string> = {};
      for (const [name, value] of Object.entries(res.headers)) {
        if (value !== undefined) flat[name] = Array.isArray(value) ? value.join(", ") : value;
      }
      return {
        url: url.toString(),
        status: res.statusCode ?? 0,
        statusMessage: res.statusMessage ?? "",
        headers: flat,
        body: counted(res, options.budget),
      };
    }
  }

  return { request };
}

export type OutboundClient = ReturnType<typeof createOutboundClient>;
