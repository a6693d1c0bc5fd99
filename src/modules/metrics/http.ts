// The HTTP side of the service's metrics: the route label of a request (bounded: a procedure
// name or a route template, never a path with ids), the hook src/app.ts calls when a response
// is finished, and GET /metrics (bearer METRICS_TOKEN on PORT, or no token on METRICS_PORT,
// loopback by default; docs/observability.md).
import crypto from "node:crypto";
import http from "node:http";
import type { Request, RequestHandler } from "express";
import type { Services } from "../../services.js";
import type { Meta } from "../../trpc/init.js";
import { errorBody } from "../../trpc/errors.js";
import { requestIdOf } from "../../trpc/context.js";
import { ingestOutcomeOf, metricsOf, statusClassOf, type IngestKind } from "./registry.js";

const REST_PREFIX = "/api/v1";
const METHODS = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]);

/** The agent's ingest operations (REST paths), counted apart in fleet_agent_ingest_requests_total. */
const INGEST_PATHS: Record<string, IngestKind> = { "/agent/heartbeat": "heartbeat", "/agent/telemetry": "telemetry", "/agent/logs": "logs" };

interface Template {
  segments: string[];
  label: string;
  /** the template itself, `/api/v1/devices/{id}` (traces' http.route) */
  path: string;
}

/**
 * Finds the route label of a request from the procedures' REST paths and the plain routes'
 * templates: REST templates are indexed by method and segment count, so a look-up compares a
 * handful of templates.
 */
export class RouteLabels {
  private readonly rest = new Map<string, Template[]>();
  private readonly procedures = new Set<string>();
  /** route label (procedure name) -> ingest kind */
  readonly ingestKinds = new Map<string, IngestKind>();

  constructor(procedures: [string, Meta][], plainPaths: Record<string, object>) {
    for (const [name, meta] of procedures) {
      this.procedures.add(name);
      if (meta.openapi) this.add(meta.openapi.method, meta.openapi.path, name);
      const kind = meta.openapi?.method === "POST" ? INGEST_PATHS[meta.openapi.path] : undefined;
      if (kind) this.ingestKinds.set(name, kind);
    }
    for (const [path, item] of Object.entries(plainPaths)) {
      for (const method of Object.keys(item)) if (METHODS.has(method.toUpperCase())) this.add(method.toUpperCase(), path, path);
    }
    // The most literal template first: /devices/export before /devices/{id}.
    for (const list of this.rest.values()) list.sort((a, b) => literals(b) - literals(a));
  }

  private add(method: string, path: string, label: string) {
    const segments = path.split("/").slice(1);
    const key = `${method} ${segments.length}`;
    const list = this.rest.get(key) ?? [];
    if (!list.some((t) => t.segments.join("/") === segments.join("/"))) list.push({ segments, label, path: `${REST_PREFIX}${path}` });
    this.rest.set(key, list);
  }

  /** A procedure name, a route template, or one of a few fixed words; never anything from the URL itself. */
  of(method: string, url: string): string {
    return this.match(method, url).label;
  }

  /** The label, and the route template where the request matched one (`/api/v1/devices/{id}`, `/trpc/devices.get`). */
  match(method: string, url: string): { label: string; template?: string } {
    const path = url.split("?")[0];
    if (path.startsWith("/trpc/")) {
      const names = path.slice("/trpc/".length).split(",");
      if (names.length > 1) return { label: "trpc-batch" };
      return this.procedures.has(names[0]) ? { label: names[0], template: `/trpc/${names[0]}` } : { label: "unmatched" };
    }
    if (path.startsWith(`${REST_PREFIX}/`)) {
      const segments = path.slice(REST_PREFIX.length).split("/").slice(1);
      const list = this.rest.get(`${method === "HEAD" ? "GET" : method} ${segments.length}`);
      const found = list?.find((t) => t.segments.every((part, i) => isParameter(part) || part === segments[i]));
      return found ? { label: found.label, template: found.path } : { label: "unmatched" };
    }
    if (path === "/metrics" || path === "/healthz" || path === "/readyz") return { label: path, template: path };
    if (path === "/v2" || path.startsWith("/v2/")) return { label: "registry-proxy" };
    return { label: "console" };
  }
}

const isParameter = (segment: string) => segment.startsWith("{") && segment.endsWith("}");
const literals = (t: Template) => t.segments.filter((s) => !isParameter(s)).length;

/** What src/app.ts calls for every finished response (a no-op when metrics are off). */
export function requestObserver(services: Services, labels: RouteLabels): (req: Request, status: number, seconds: number) => void {
  const metrics = metricsOf(services);
  if (!metrics) return () => undefined;
  return (req, status, seconds) => {
    const method = METHODS.has(req.method) ? req.method : "OTHER";
    const route = labels.of(req.method, req.originalUrl);
    metrics.httpRequests.inc({ route, method, status_class: statusClassOf(status) });
    metrics.httpDuration.observe({ route, method }, seconds);
    const kind = labels.ingestKinds.get(route);
    if (kind && method === "POST") metrics.ingestRequests.inc({ kind, outcome: ingestOutcomeOf(status) });
  };
}

/** Compares in constant time (the token's length is not secret). */
function sameToken(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && crypto.timingSafeEqual(a, b);
}

/**
 * GET /metrics on the service port: 404 when METRICS_TOKEN is not set (the endpoint is off
 * there), 401 without the right bearer token. Answers this process's metrics.
 */
export function metricsRoute(services: Services): RequestHandler {
  const token = services.config.METRICS_TOKEN;
  return async (req, res) => {
    const metrics = metricsOf(services);
    // Off on PORT without a token: the API's 404 (never the console's page).
    if (!token || !metrics) return void res.status(404).json(errorBody(requestIdOf(req), 404, "NOT_FOUND", "Not found"));
    const header = req.headers.authorization ?? "";
    const given = /^Bearer (.+)$/i.exec(header)?.[1] ?? "";
    res.setHeader("Cache-Control", "no-store");
    if (!sameToken(given, token)) {
      res.setHeader("WWW-Authenticate", 'Bearer realm="metrics"');
      return void res.status(401).type("text/plain").send("metrics need Authorization: Bearer <METRICS_TOKEN>\n");
    }
    try {
      const text = await metrics.registry.metrics();
      res.status(200).type(metrics.registry.contentType).send(text);
    } catch (err) {
      services.logger.error({ err: (err as Error).message }, "metrics collection failed");
      res.status(500).type("text/plain").send("metrics collection failed\n");
    }
  };
}

/**
 * The metrics port (METRICS_PORT on METRICS_HOST, loopback by default): /metrics without a
 * token, nothing else. `collect` answers the exposition (this process's, or in the cluster's
 * primary, all workers' summed).
 */
export async function listenMetricsPort(
  host: string, port: number, collect: () => Promise<{ contentType: string; text: string }>, onError: (err: Error) => void,
): Promise<http.Server> {
  const server = http.createServer((req, res) => {
    if (req.method !== "GET" || (req.url ?? "").split("?")[0] !== "/metrics") {
      res.writeHead(404, { "content-type": "text/plain" }).end("only GET /metrics here\n");
      return;
    }
    collect().then(
      ({ contentType, text }) => res.writeHead(200, { "content-type": contentType, "cache-control": "no-store" }).end(text),
      (err: Error) => {
        onError(err);
        res.writeHead(500, { "content-type": "text/plain" }).end("metrics collection failed\n");
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve());
  });
  return server;
}
