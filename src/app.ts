// The HTTP surface: health probes, tRPC at /trpc, the OpenAPI document and docs page, and
// the REST facade under /api/v1 (mounted last: the trpc-to-openapi adapter never calls next).
import crypto from "node:crypto";
import express, { type Express, type NextFunction, type Request, type Response } from "express";
import helmet from "helmet";
import { createExpressMiddleware } from "@trpc/server/adapters/express";
import type { Services } from "./services.js";
import { appRouter, procedureMetas } from "./trpc/router.js";
import { createContextFactory, noteRequestOfError, requestIdOf } from "./trpc/context.js";
import { buildOpenApiDocument, docsRouter, documentedRestPaths } from "./http/docs.js";
import { extraOpenApiPaths, mountFrontDoor, mountLeanAgentRoute, mountRegistryPullProxy, plainRoutes } from "./http/routes.js";
import { headersSetBy } from "./http/front-door.js";
import { gatedRouters } from "./http/route-gate.js";
import { acceptEmptyBody } from "./http/empty-body.js";
import { restFacade } from "./http/rest-facade.js";
import { rateLimitMiddleware } from "./http/rate-limit.js";
import { csrfGuard } from "./http/csrf.js";
import { requestLogLevel } from "./http/request-log.js";
import { consoleRoutes } from "./http/console.js";
import { errorBody } from "./trpc/errors.js";
import { storableInput } from "./http/storable-input.js";
import { ingestAdmission } from "./http/ingest-admission.js";
import { metricsRoute, requestObserver, RouteLabels } from "./modules/metrics/http.js";
import { requestTracer } from "./lib/tracing/index.js";

const REQUEST_ID = /^[A-Za-z0-9._-]{1,100}$/;

/** The request path as logged: no query string (tickets travel there) and no path secrets. */
export function loggablePath(url: string): string {
  return url.split("?")[0].replace(/^(\/api\/v1\/public\/invitations\/)[^/]+/, "$1[redacted]");
}

export function createApp(services: Services): Express {
  const { config, logger } = services;
  const app = express();
  app.disable("x-powered-by");
  app.set("trust proxy", config.TRUST_PROXY_HOPS);
  // Requests counted by route (procedure name or template) when metrics are on (docs/observability.md).
  const routeLabels = new RouteLabels(procedureMetas(), extraOpenApiPaths);
  const observeRequest = requestObserver(services, routeLabels);

  // Request id on every response; a sane incoming one is kept for tracing across hops. The log
  // line and the metrics when the answer is written (the front door below starts requests too).
  const startRequest = (req: Request, res: Response): string => {
    const incoming = req.headers["x-request-id"];
    const id = typeof incoming === "string" && REQUEST_ID.test(incoming) ? incoming : crypto.randomUUID();
    (req as Request & { id: string }).id = id;
    const started = process.hrtime.bigint();
    res.on("finish", () => {
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      const level = requestLogLevel(res.statusCode, ms, String(res.getHeader("content-type") ?? ""), config.LOG_SLOW_REQUEST_MS);
      if (logger.isLevelEnabled(level)) logger[level]({ requestId: id, method: req.method, path: loggablePath(req.originalUrl), status: res.statusCode, ms }, "request");
      observeRequest(req, res.statusCode, ms / 1000);
    });
    return id;
  };
  // A span per request when tracing is on (OTEL_EXPORTER_OTLP_ENDPOINT, docs/observability.md).
  const traceRequest = requestTracer((method, url) => routeLabels.match(method, url), requestIdOf);
  const security = helmet({
    // No upgrade-insecure-requests: served over plain HTTP inside a network (http://fleet.lan:3000),
    // it would make browsers fetch the docs page's own scripts over https, which is not there.
    contentSecurityPolicy: { directives: { "script-src": ["'self'"], "img-src": ["'self'", "data:"], "upgrade-insecure-requests": null } },
  });
  const origins = config.CORS_ORIGINS.split(",").map((o) => o.trim()).filter(Boolean);

  // The heartbeat's front door, before everything else: the usual heartbeat (JSON body, device
  // token, no CORS origin) is answered here with the same steps as below (request id, security
  // headers, rate limits, the request boundary, the lean route); any other request passes on
  // (src/http/front-door.ts). Not with tracing on: every request then has its span below.
  if (!traceRequest) {
    mountFrontDoor(app, services, { startRequest, securityHeaders: headersSetBy(security), ordinary: (req) => origins.length > 0 && req.headers.origin !== undefined });
  }

  app.use((req: Request, res: Response, next: NextFunction) => {
    res.setHeader("x-request-id", startRequest(req, res));
    next();
  });
  if (traceRequest) app.use(traceRequest);

  app.use(security);

  if (origins.length > 0) {
    app.use((req, res, next) => {
      const origin = req.headers.origin;
      if (origin && origins.includes(origin)) {
        res.setHeader("Access-Control-Allow-Origin", origin);
        res.setHeader("Vary", "Origin");
        res.setHeader("Access-Control-Allow-Headers", "Content-Type, Authorization, X-API-Key, X-Request-Id");
        res.setHeader("Access-Control-Allow-Methods", "GET, POST, PUT, PATCH, DELETE, OPTIONS");
        if (req.method === "OPTIONS") return void res.status(204).end();
      }
      next();
    });
  }

  // Before anything else under the API: a cookie-authenticated change must come from our own pages.
  app.use(["/api/v1", "/trpc"], csrfGuard);

  app.get("/healthz", (_req, res) => void res.json({ status: "ok" }));
  app.get("/metrics", metricsRoute(services)); // bearer METRICS_TOKEN; without it, the 404 below
  app.get("/readyz", async (_req, res) => {
    try {
      await services.database.opened.raw.query("SELECT 1");
      res.json({ status: "ready" });
    } catch {
      res.status(503).json({ status: "unavailable", code: "SERVICE_UNAVAILABLE", message: "database unreachable" });
    }
  });

  const limit = rateLimitMiddleware(services);
  app.use("/trpc", limit);
  app.use("/api/v1", (req, res, next) => (req.path === "/openapi.json" || req.path.startsWith("/docs") ? next() : limit(req, res, next)));

  // Device ingest takes a turn of the process's ingest gate before its body is read: 503 with
  // Retry-After when busy (src/http/ingest-admission.ts).
  app.use(["/api/v1", "/trpc"], ingestAdmission(services, procedureMetas()));

  // Strings PostgreSQL cannot store are refused here, once for every way in (path, query, JSON
  // body, which is read here), before authentication and any work; nothing but the rate
  // limiter's count and the ingest gate precede it. The body reaches the adapters and routes as req.body.
  app.use(["/api/v1", "/trpc"], storableInput(services, { restPaths: documentedRestPaths(appRouter, extraOpenApiPaths), procedures: procedureMetas() }));

  // The lean heartbeat route, before everything else under /api/v1 (after the rate limiter);
  // documented by the agent.heartbeat procedure (src/modules/agent/heartbeat-route.ts).
  mountLeanAgentRoute(app, services);
  // The registry proxy devices pull private images through (/v2, outside /api/v1).
  mountRegistryPullProxy(app, services, limit);

  const createContext = createContextFactory(services);
  app.use("/trpc", createExpressMiddleware({ router: appRouter, createContext, maxBodySize: config.BODY_LIMIT_BYTES, onError: noteRequestOfError }));

  app.use("/api/v1", gatedRouters(docsRouter(() => buildOpenApiDocument(appRouter, extraOpenApiPaths))));

  app.use("/api/v1", acceptEmptyBody); // actions whose request is "none" (spec ops 7, 19, 20) need no body
  // What procedures cannot answer (downloads, streams, redirects): each domain's plain routes,
  // listed in src/http/routes.ts.
  app.use("/api/v1", gatedRouters(...plainRoutes(services))); // entered only for their paths (src/http/route-gate.ts)
  // The REST facade, last (src/http/rest-facade.ts: path parameters decoded, error bodies as documented).
  app.use("/api/v1", restFacade(services, appRouter));

  // The web console at / (its pages and assets); API paths never reach it.
  app.use(consoleRoutes());

  // Anything else: JSON 404 rather than express's HTML page.
  app.use((req, res) => void res.status(404).json(errorBody(requestIdOf(req), 404, "NOT_FOUND", "Not found")));
  // Last resort: express-level failures leave as JSON without details.
  app.use((err: Error & { status?: number; type?: string }, req: Request, res: Response, _next: NextFunction) => {
    const status = err.status && err.status >= 400 && err.status < 500 ? err.status : 500;
    if (status === 500) logger.error({ err: { message: err.message, stack: err.stack }, requestId: (req as Request & { id?: string }).id }, "unhandled error");
    res.status(status).json(status === 500 ? errorBody(requestIdOf(req), 500, "INTERNAL_SERVER_ERROR", "Internal server error") : errorBody(requestIdOf(req), status, "BAD_REQUEST", "Bad request"));
  });
  return app;
}
