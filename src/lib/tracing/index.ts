// OpenTelemetry traces (docs/observability.md, "Traces"): off unless an OTLP endpoint is set
// (the standard OTEL_* variables, ./settings.ts). Off, this file is all that
// runs: every hook below is one null check, and no OpenTelemetry module is loaded (the SDK is
// an import() of ./sdk.js, made by startTracing only when on).
//
// Spans: one per HTTP request (server; named by its route template, never the raw path), one
// per tRPC procedure (its child, src/trpc/tracing.ts), one per SQL statement (Prisma's driver adapter and the raw
// driver, src/db/adapters.ts), one per outbound HTTP request (src/lib/outbound-http.ts, with
// traceparent sent), one per background job. What never goes into an attribute: header values
// (Authorization, Cookie, X-API-Key), query strings, URL paths of outbound calls (a webhook's
// path may be its secret), user info of URLs, SQL literals and parameter values, error messages.
import type { Request, RequestHandler } from "express";
import type { Attributes, Span } from "@opentelemetry/api";
import type { OpenedDatabase, RawDatabase } from "../../db/adapters.js";
import type { Logger } from "../logger.js";
import { tracingSettingsOf } from "./settings.js";
import type { TracingSdk } from "./sdk.js";

/** Process-wide, as OpenTelemetry's global tracer provider is: set once by startTracing. */
let sdk: TracingSdk | null = null;
let starting: Promise<void> | null = null;

const ERROR = 2; // SpanStatusCode.ERROR, without loading @opentelemetry/api to name it
const METHODS = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]);

/**
 * Starts the SDK when the environment asks for traces (throws TracingConfigError naming the
 * variable when it asks wrongly); otherwise does nothing and loads nothing.
 */
export async function startTracing(logger: Logger, env: Record<string, string | undefined> = process.env): Promise<void> {
  const settings = tracingSettingsOf(env);
  if (!settings) return;
  starting ??= (async () => {
    const { loadTracingSdk } = await import("./sdk.js");
    sdk = await loadTracingSdk(settings, env.npm_package_version);
    const { root, ratio, parentBased } = settings.sampler;
    // Only the endpoint's origin: its path or user info could hold a credential.
    logger.info({ endpoint: settings.endpoint.origin, sampler: `${parentBased ? "parentbased_" : ""}${root}${root === "traceidratio" ? ` ${ratio}` : ""}` }, "tracing on: exporting spans over OTLP/HTTP");
  })();
  await starting;
}

/** True once the SDK is loaded (the tests' flag for "off loads nothing"). */
export function tracingOn(): boolean {
  return sdk !== null;
}

/** Exports what is buffered (on stop; the process may exit right after). */
export async function flushTracing(): Promise<void> {
  await sdk?.flush().catch(() => undefined);
}

function failed(span: Span, type: string) {
  span.setStatus({ code: ERROR });
  span.setAttribute("error.type", type);
}

/** error.type of a failure: a code (SQLSTATE, ECONNREFUSED, ...) or the error's class, never its message. */
function errorTypeOf(err: unknown): string {
  const e = err as { code?: unknown; name?: unknown; cause?: { code?: unknown } } | null;
  const code = e?.code ?? e?.cause?.code;
  if (typeof code === "string" && /^[A-Za-z0-9_]{1,40}$/.test(code)) return code;
  return typeof e?.name === "string" ? e.name.slice(0, 60) : "Error";
}

// ---- HTTP requests -------------------------------------------------------------------------

/**
 * The request span's middleware (after the one that assigns the request id), or null when
 * tracing is off. The span is the active context of everything the request does; it ends with
 * the response (or the connection's close).
 */
export function requestTracer(
  /** the route label and template (the metrics' RouteLabels.match) */
  routeOf: (method: string, url: string) => { label: string; template?: string },
  requestIdOf: (req: Request) => string,
): RequestHandler | null {
  const s = sdk;
  if (!s) return null;
  const { api } = s;
  return (req, res, next) => {
    const method = METHODS.has(req.method) ? req.method : "_OTHER";
    const { label, template } = routeOf(req.method, req.originalUrl);
    const attributes: Attributes = {
      "http.request.method": method,
      "url.scheme": req.protocol,
      "fleet.request_id": requestIdOf(req),
      "fleet.route": label,
    };
    if (template) attributes["http.route"] = template;
    const parent = s.extract(req.headers);
    const span = s.startSpan(template ? `${method} ${template}` : method, "server", attributes, { parent })!;
    // Not sampled: nothing beneath it would be recorded either, so no context is set up (that
    // work, ~30 µs of CPU a request, is what a low sampling ratio saves). Its procedure, SQL and
    // outbound calls then make no span (they need an active parent), and send no traceparent.
    if (!span.isRecording()) return void next();
    const active = api.trace.setSpan(parent, span);
    let ended = false;
    const end = () => {
      if (ended) return;
      ended = true;
      span.setAttribute("http.response.status_code", res.statusCode);
      if (!res.writableFinished) failed(span, "aborted");
      else if (res.statusCode >= 500) failed(span, String(res.statusCode));
      span.end();
    };
    res.once("finish", end);
    res.once("close", end);
    // The body arrives in events of the request: they run in the request's context too.
    api.context.bind(active, req);
    api.context.bind(active, res);
    api.context.with(active, next);
  };
}

// ---- tRPC procedures -----------------------------------------------------------------------

/** Runs a procedure (tRPC middleware's next) in a span named after it. */
export async function inProcedureSpan<R extends { ok: boolean; error?: { code: string } }>(path: string, type: string, next: () => Promise<R>): Promise<R> {
  const s = sdk;
  if (!s) return next();
  // Only inside a sampled request's span (all procedures are called over HTTP).
  const span = s.startSpan(path, "internal", { "trpc.procedure": path, "trpc.type": type }, { requireParent: true });
  if (!span) return next();
  try {
    const result = await s.api.context.with(s.api.trace.setSpan(s.api.context.active(), span), next);
    if (!result.ok && result.error) {
      span.setAttribute("trpc.error_code", result.error.code);
      if (result.error.code === "INTERNAL_SERVER_ERROR") failed(span, result.error.code);
    }
    return result;
  } catch (err) {
    failed(span, errorTypeOf(err));
    throw err;
  } finally {
    span.end();
  }
}

// ---- background jobs -----------------------------------------------------------------------

/** A job run's span (the root of its SQL statements and outbound calls). */
export async function inJobSpan<T>(type: string, attempt: number, run: () => Promise<T>): Promise<T> {
  const s = sdk;
  if (!s) return run();
  const span = s.startSpan(`job ${type}`, "internal", { "fleet.job.type": type, "fleet.job.attempt": attempt }, { parent: s.api.ROOT_CONTEXT })!;
  try {
    return await s.api.context.with(s.api.trace.setSpan(s.api.ROOT_CONTEXT, span), run);
  } catch (err) {
    failed(span, errorTypeOf(err));
    throw err;
  } finally {
    span.end();
  }
}

// ---- SQL -----------------------------------------------------------------------------------

/**
 * The statement as recorded: string literals (also E'', dollar-quoted) and numbers become `?`,
 * whitespace is folded, at most 2000 characters. Parameters ($1, ...) are never recorded.
 */
export function sqlWithoutLiterals(sql: string): string {
  return sql
    .replace(/\$([A-Za-z_][A-Za-z0-9_]*)?\$[\s\S]*?\$\1\$/g, "?")
    .replace(/(?<![\w"])[Ee]'(?:[^'\\]|\\[\s\S]|'')*'/g, "?")
    .replace(/'(?:[^']|'')*'/g, "?")
    .replace(/(?<![\w$."])-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?\b/g, "?")
    .replace(/\s+/g, " ")
    .trim()
    .slice(0, 2000);
}

const OPERATION = /^\s*(?:\/\*[\s\S]*?\*\/\s*)*([A-Za-z]+)/;
const TABLE = /\b(?:FROM|INTO|UPDATE|JOIN)\s+(?:"?[A-Za-z_][\w]*"?\.)?"?([A-Za-z_][\w]*)"?/i;

async function inSqlSpan<T>(sql: string, run: () => Promise<T>): Promise<T> {
  const s = sdk;
  if (!s) return run();
  const operation = (OPERATION.exec(sql)?.[1] ?? "SQL").toUpperCase();
  const table = operation === "SELECT" || operation === "INSERT" || operation === "UPDATE" || operation === "DELETE" || operation === "WITH" ? TABLE.exec(sql)?.[1] : undefined;
  const attributes: Attributes = { "db.system": "postgresql", "db.operation": operation, "db.statement": sqlWithoutLiterals(sql) };
  if (table) attributes["db.sql.table"] = table;
  // Only inside a request or a job: the job runner's polling would be a trace a second otherwise.
  const span = s.startSpan(table ? `${operation} ${table}` : operation, "client", attributes, { requireParent: true });
  if (!span) return run();
  try {
    return await run();
  } catch (err) {
    failed(span, errorTypeOf(err));
    throw err;
  } finally {
    span.end();
  }
}

function tracedRaw(raw: RawDatabase): RawDatabase {
  return {
    kind: raw.kind,
    exec: (sql) => inSqlSpan(sql, () => raw.exec(sql)),
    query: (sql, params, options) => inSqlSpan(sql, () => raw.query(sql, params, options)),
    session: (work) => raw.session((db) => work(tracedRaw(db))),
    close: () => raw.close(),
  };
}

type Method = (...args: unknown[]) => unknown;

/** A Prisma driver adapter (or its transaction) whose queryRaw/executeRaw are spans. */
function tracedQueryable<T extends object>(queryable: T): T {
  return new Proxy(queryable, {
    get(target, property) {
      const value = Reflect.get(target, property, target) as unknown;
      if (typeof value !== "function") return value;
      const method = value as Method;
      if (property === "queryRaw" || property === "executeRaw") {
        return (query: { sql: string }) => inSqlSpan(query.sql, () => method.call(target, query) as Promise<unknown>);
      }
      if (property === "startTransaction") return async (...args: unknown[]) => tracedQueryable((await method.apply(target, args)) as object);
      return method.bind(target);
    },
  });
}

/**
 * Makes the database's statements spans (called by openDatabase once migrations are applied,
 * before the Prisma client is made; does nothing when tracing is off).
 */
export function instrumentDatabase(opened: OpenedDatabase): void {
  if (!sdk) return;
  opened.raw = tracedRaw(opened.raw);
  opened.adapter = new Proxy(opened.adapter, {
    get(target, property) {
      const value = Reflect.get(target, property, target) as unknown;
      if (typeof value !== "function") return value;
      const method = value as Method;
      if (property === "connect" || property === "connectToShadowDb") return async () => tracedQueryable((await method.call(target)) as object);
      return method.bind(target);
    },
  });
}

// ---- outbound HTTP -------------------------------------------------------------------------

/**
 * One outbound request (src/lib/outbound-http.ts) as a client span, until its response's
 * headers: method, host, port and scheme only (no path, no query, no user info). Writes
 * traceparent into `headers` when a span is made.
 */
export async function inOutboundSpan<T extends { statusCode?: number }>(method: string, url: URL, headers: Record<string, string>, send: () => Promise<T>): Promise<T> {
  const s = sdk;
  if (!s) return send();
  const scheme = url.protocol.replace(/:$/, "");
  const span = s.startSpan(method, "client", {
    "http.request.method": METHODS.has(method) ? method : "_OTHER",
    "server.address": url.hostname,
    "server.port": Number(url.port || (scheme === "https" ? 443 : 80)),
    "url.scheme": scheme,
  }, { requireParent: true });
  if (!span) return send();
  const active = s.api.trace.setSpan(s.api.context.active(), span);
  s.api.propagation.inject(active, headers);
  try {
    const response = await s.api.context.with(active, send);
    const status = response.statusCode ?? 0;
    span.setAttribute("http.response.status_code", status);
    if (status >= 400) failed(span, String(status));
    return response;
  } catch (err) {
    failed(span, errorTypeOf(err));
    throw err;
  } finally {
    span.end();
  }
}
