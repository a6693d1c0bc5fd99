// A small client of the OCI distribution API (/v2/...) for one registry, always through the
// outbound address policy (lib/outbound-http.ts), with the registry's verifyTls setting.
// Authentication: BASIC sends the username:password pair, TOKEN sends the raw token as a
// bearer token. When the registry answers 401 with `WWW-Authenticate: Bearer realm=...`, the
// client fetches a token from the realm (with the same credential, or anonymously for NONE)
// and retries with it: the Docker token flow used by most registries.
import type { OutboundPolicy } from "../../../lib/outbound.js";
import { ByteBudget, createOutboundClient, type OutboundResponse } from "../../../lib/outbound-http.js";

export class RegistryError extends Error {
  override readonly name = "RegistryError";
  constructor(message: string, readonly status?: number) {
    super(message);
  }
}

export interface DistributionOptions {
  /** registry base URL, without a trailing slash */
  url: string;
  authType: string;
  /** the unsealed credential (never logged, never part of an error message) */
  credential: string | undefined;
  verifyTls: boolean;
  policy: OutboundPolicy;
  signal?: AbortSignal;
  maxBytes: number;
}

/** Parses `Bearer realm="...",service="...",scope="..."` (quoted or bare values). */
export function parseBearerChallenge(header: string | undefined): { realm: string; service?: string; scope?: string } | null {
  if (!header) return null;
  const match = /^\s*Bearer\s+(.*)$/i.exec(header);
  if (!match) return null;
  const params: Record<string, string> = {};
  for (const m of match[1]!.matchAll(/([a-zA-Z_]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^,\s]*))/g)) {
    params[m[1]!.toLowerCase()] = m[2] !== undefined ? m[2].replace(/\\(.)/g, "$1") : m[3]!;
  }
  if (!params.realm) return null;
  return { realm: params.realm, service: params.service, scope: params.scope };
}

async function readText(res: OutboundResponse): Promise<string> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of res.body) chunks.push(chunk);
  return Buffer.concat(chunks).toString("utf8");
}

async function drain(res: OutboundResponse) {
  try {
    for await (const _ of res.body) { /* discard */ }
  } catch {
    /* ignore */
  }
}

export function createDistributionClient(options: DistributionOptions) {
  const http = createOutboundClient({
    policy: options.policy,
    signal: options.signal,
    budget: new ByteBudget(options.maxBytes),
    verifyTls: options.verifyTls,
    userAgent: "fleet-manager-oci-sync",
  });
  /** bearer tokens obtained from the realm, by scope */
  const tokens = new Map<string, string>();

  function directAuthorization(): string | undefined {
    if (options.authType === "NONE" || !options.credential) return undefined;
    if (options.authType === "TOKEN") return `Bearer ${options.credential}`;
    return `Basic ${Buffer.from(options.credential, "utf8").toString("base64")}`;
  }

  async function exchange(challenge: { realm: string; service?: string; scope?: string }): Promise<string> {
    const realm = new URL(challenge.realm);
    if (challenge.service) realm.searchParams.set("service", challenge.service);
    if (challenge.scope) realm.searchParams.set("scope", challenge.scope);
    const auth = directAuthorization();
    const res = await http.request({ url: realm.toString(), headers: { accept: "application/json", ...(auth ? { authorization: auth } : {}) } });
    if (res.status !== 200) {
      await drain(res);
      throw new RegistryError(`the token service answered ${res.status}${res.status === 401 || res.status === 403 ? " (credential refused)" : ""}`, res.status);
    }
    let body: { token?: string; access_token?: string };
    try {
      body = JSON.parse(await readText(res));
    } catch {
      throw new RegistryError("the token service answered something that is not JSON");
    }
    const token = body.token ?? body.access_token;
    if (!token) throw new RegistryError("the token service answered no token");
    return token;
  }

  /** GET (or HEAD) a path below the registry URL, or an absolute URL (paging links). */
  async function request(pathOrUrl: string, init: { method?: string; accept?: string; scope?: string; range?: string } = {}): Promise<OutboundResponse> {
    const url = /^https?:\/\//.test(pathOrUrl) ? pathOrUrl : options.url + pathOrUrl;
    const headers: Record<string, string> = init.accept ? { accept: init.accept } : {};
    if (init.range) headers.range = init.range;
    const cacheKey = init.scope ?? "";
    const cached = tokens.get(cacheKey);
    const auth = cached ? `Bearer ${cached}` : directAuthorization();
    const first = await http.request({ url, method: init.method, headers: auth ? { ...headers, authorization: auth } : headers });
    if (first.status !== 401) return first;
    const challenge = parseBearerChallenge(first.headers["www-authenticate"]);
    // A Basic challenge after our credential (or without one): refused, answered as it is.
    if (!challenge) return first;
    await drain(first);
    const token = await exchange({ ...challenge, scope: challenge.scope ?? init.scope });
    tokens.set(cacheKey, token);
    return http.request({ url, method: init.method, headers: { ...headers, authorization: `Bearer ${token}` } });
  }

  return { request, readText, drain };
}

export type DistributionClient = ReturnType<typeof createDistributionClient>;
