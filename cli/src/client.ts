// The CLI's only way to the service: its REST API over HTTP (/api/v1), as any third-party
// client calls it. X-API-Key for an API key, Authorization: Bearer for a session; a session
// whose access token expired is refreshed once with its refresh token (POST /auth/refresh)
// and the new tokens are saved to the context. Every answer other than 2xx becomes a CliError
// carrying the API's message, its invalid fields and the exit code of its status.
import { CliError, EXIT, exitCodeOfStatus, type ApiIssue } from "./errors.js";
import type { Context } from "./config.js";

/** How long a refused refresh waits for the tokens another fleet process is saving. */
const REFRESH_WAIT_MS = 3_000;

export interface RequestOptions {
  query?: Record<string, unknown>;
  body?: unknown;
  headers?: Record<string, string>;
  /** answer the Response itself (streams), after the status check */
  raw?: boolean;
  signal?: AbortSignal;
}

export class ApiClient {
  constructor(
    readonly context: Context,
    /** called with the context after its tokens were refreshed, to save them */
    private readonly onRefresh: (context: Context) => void = () => {},
    /** the context as saved now (another fleet process may have refreshed its tokens meanwhile) */
    private readonly reload: () => Context | undefined = () => undefined,
  ) {}

  get server(): string {
    return this.context.server.replace(/\/+$/, "");
  }

  url(path: string, query: Record<string, unknown> = {}): string {
    const url = new URL(`${this.server}/api/v1${path}`);
    for (const [key, value] of Object.entries(query)) {
      if (value === undefined || value === null) continue;
      for (const v of Array.isArray(value) ? value : [value]) url.searchParams.append(key, String(v));
    }
    return url.toString();
  }

  private authHeaders(): Record<string, string> {
    if (this.context.apiKey) return { "x-api-key": this.context.apiKey };
    if (this.context.accessToken) return { authorization: `Bearer ${this.context.accessToken}` };
    return {};
  }

  async request<T = unknown>(method: string, path: string, options: RequestOptions = {}): Promise<T> {
    let res = await this.send(method, path, options);
    if (res.status === 401 && !this.context.apiKey && this.context.refreshToken && (await this.refresh())) res = await this.send(method, path, options);
    if (!res.ok) throw await errorOf(res);
    if (options.raw) return res as T;
    const text = await res.text();
    if (!text) return undefined as T;
    return (res.headers.get("content-type") ?? "").includes("json") ? (JSON.parse(text) as T) : (text as T);
  }

  private async send(method: string, path: string, options: RequestOptions): Promise<Response> {
    const headers: Record<string, string> = { accept: "application/json", ...this.authHeaders(), ...(options.headers ?? {}) };
    let body: string | undefined;
    if (options.body !== undefined) {
      body = JSON.stringify(options.body);
      headers["content-type"] = "application/json";
    } else if (method !== "GET" && method !== "DELETE" && method !== "HEAD") {
      body = "{}";
      headers["content-type"] = "application/json";
    }
    try {
      return await fetch(this.url(path, options.query), { method, headers, body, signal: options.signal });
    } catch (err) {
      if ((err as Error).name === "AbortError") throw err;
      const cause = (err as { cause?: { code?: string; message?: string } }).cause;
      throw new CliError(EXIT.server, `cannot reach ${this.server}: ${cause?.code ?? cause?.message ?? (err as Error).message}`);
    }
  }

  /**
   * Exchanges the refresh token for new tokens; false when the server refused it. A refresh
   * token works once, so when another fleet process (a script running several at a time)
   * refreshed first, the tokens it saved are taken instead.
   */
  private async refresh(): Promise<boolean> {
    if (this.adoptSaved()) return true;
    const res = await fetch(this.url("/auth/refresh"), {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json" },
      body: JSON.stringify({ refreshToken: this.context.refreshToken }),
    }).catch(() => null);
    if (!res?.ok) return this.awaitSaved();
    const tokens = (await res.json()) as { accessToken: string; refreshToken: string; expiresAt: string };
    Object.assign(this.context, { accessToken: tokens.accessToken, refreshToken: tokens.refreshToken, expiresAt: tokens.expiresAt });
    this.onRefresh(this.context);
    return true;
  }

  /**
   * The session's access token, refreshed first when it expires within a minute (for a
   * long-running user of the credential, such as the MCP bridge of `fleet mcp`).
   */
  async accessToken(): Promise<string | undefined> {
    const expiresAt = this.context.expiresAt ? Date.parse(this.context.expiresAt) : NaN;
    if (this.context.refreshToken && expiresAt - Date.now() < 60_000) await this.refresh();
    return this.context.accessToken;
  }

  /**
   * After a refused refresh: the process that used the refresh token first may not have saved
   * its new tokens yet (its answer and its write come a moment after ours on a busy machine).
   * Takes them once they are saved; false when none come within REFRESH_WAIT_MS (a session
   * ended elsewhere).
   */
  private async awaitSaved(): Promise<boolean> {
    for (const deadline = Date.now() + REFRESH_WAIT_MS; ; ) {
      if (this.adoptSaved()) return true;
      if (Date.now() > deadline) return false;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  /** Takes the saved tokens when they are not the ones this client holds. */
  private adoptSaved(): boolean {
    const saved = this.reload();
    if (!saved?.accessToken || saved.accessToken === this.context.accessToken) return false;
    Object.assign(this.context, { accessToken: saved.accessToken, refreshToken: saved.refreshToken, expiresAt: saved.expiresAt });
    return true;
  }

  /** Every item of a paged list (`{ items, total, hasMore }`), 200 at a time. */
  async all<T = unknown>(path: string, query: Record<string, unknown> = {}): Promise<{ items: T[]; total: number }> {
    const items: T[] = [];
    let total = 0;
    for (let offset = 0; ; ) {
      const page = await this.request<{ items: T[]; total: number; hasMore?: boolean }>("GET", path, { query: { ...query, limit: 200, offset } });
      items.push(...page.items);
      total = page.total;
      offset += page.items.length;
      if (page.items.length === 0 || page.hasMore === false || offset >= page.total) break;
    }
    return { items, total };
  }
}

/** The CliError of an API answer: its message, invalid fields and request id (src/http/error-response.ts). */
export async function errorOf(res: Response): Promise<CliError> {
  const text = await res.text().catch(() => "");
  let body: { message?: string; code?: string; issues?: ApiIssue[]; data?: { requestId?: string } } = {};
  try {
    body = JSON.parse(text);
  } catch {
    /* not JSON: a proxy's page, say */
  }
  const message = body.message ?? (text.trim().slice(0, 200) || res.statusText || `HTTP ${res.status}`);
  const retry = res.status === 429 && res.headers.get("retry-after") ? ` (retry after ${res.headers.get("retry-after")} s)` : "";
  return new CliError(exitCodeOfStatus(res.status), message + retry, {
    status: res.status,
    code: body.code,
    requestId: body.data?.requestId ?? res.headers.get("x-request-id") ?? undefined,
    issues: body.issues,
  });
}
