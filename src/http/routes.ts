// Where the domains' plain express routes are mounted and documented. Each route lives in its
// module, beside the router of the same first path segment (src/modules/<segment>/*-route.ts),
// and serves what a procedure cannot answer (file downloads, event streams, redirects, the
// lean heartbeat) through the procedures' authenticate/permission/audit functions
// (guarded-route.ts). This is the one file of src/http that imports domain modules: it only
// lists them (test/unit/import-rules.test.ts).
import type { Express, RequestHandler, Router } from "express";
import type { Services } from "../services.js";
import type { ExtraPaths } from "./docs.js";
import { frontDoor, putInFront, type FrontDoorCommon } from "./front-door.js";
import { procedureMetas } from "../trpc/router.js";
import { AGENT_HEARTBEAT_PATH, agentHeartbeatRoute, HEARTBEAT_PROCEDURE, heartbeatAnswer } from "../modules/agent/heartbeat-route.js";
import { PULL_PROXY_PATH, pullProxyRoutes } from "../modules/agent/pull-proxy-route.js";
import { pkiOpenApiPaths, pkiRoutes } from "../modules/ca-certificates/download-routes.js";
import { usersExportOpenApiPaths, usersExportRoutes } from "../modules/users/export-route.js";
import { applicationIconOpenApiPaths, applicationIconRoutes } from "../modules/applications/icon-route.js";
import { logStreamOpenApiPaths, logStreamRoutes } from "../modules/logs/stream-route.js";
import { realtimeOpenApiPaths, realtimeRoutes } from "../modules/realtime/connect-route.js";
import { auditExportOpenApiPaths, auditExportRoutes } from "../modules/audit/export-route.js";
import { activityExportOpenApiPaths, activityExportRoutes } from "../modules/activity/export-route.js";
import { marketplaceProgressOpenApiPaths, marketplaceProgressRoutes } from "../modules/marketplace/progress-route.js";
import { oidcSignInOpenApiPaths, oidcSignInRoutes } from "../modules/auth/oidc-sign-in-route.js";
import { mcpOpenApiPaths, mcpRoutes } from "../modules/mcp/mcp-route.js";
import { fleetMetricsOpenApiPaths, fleetMetricsRoutes } from "../modules/fleet/metrics-route.js";
import { configWebhookOpenApiPaths, configWebhookRoutes } from "../modules/config/webhook-route.js";
import { actionBundleOpenApiPaths, actionBundleRoutes } from "../modules/agent/action-bundle-route.js";
import { systemBundleOpenApiPaths, systemBundleRoutes } from "../modules/agent/system-bundle-route.js";
import { deviceActionBundleOpenApiPaths, deviceActionBundleRoutes } from "../modules/device-actions/bundle-route.js";
import { remoteRecordingOpenApiPaths, remoteRecordingRoutes } from "../modules/remote-sessions/recording-route.js";

interface PlainRoutes {
  routes: (services: Services) => Router;
  /** their path items, merged into openapi.json (in this order) */
  openApiPaths: ExtraPaths;
}

const PLAIN_ROUTES: PlainRoutes[] = [
  { routes: pkiRoutes, openApiPaths: pkiOpenApiPaths }, // PEM download and CRL: not JSON
  { routes: usersExportRoutes, openApiPaths: usersExportOpenApiPaths }, // CSV/JSON download
  { routes: applicationIconRoutes, openApiPaths: applicationIconOpenApiPaths }, // binary image with ETag
  { routes: logStreamRoutes, openApiPaths: logStreamOpenApiPaths }, // SSE log follow
  { routes: realtimeRoutes, openApiPaths: realtimeOpenApiPaths }, // the WebSocket's plain-GET answer
  { routes: auditExportRoutes, openApiPaths: auditExportOpenApiPaths }, // streamed CSV/JSON
  { routes: activityExportRoutes, openApiPaths: activityExportOpenApiPaths }, // streamed CSV/JSON
  { routes: marketplaceProgressRoutes, openApiPaths: marketplaceProgressOpenApiPaths }, // JSON snapshot or SSE
  { routes: oidcSignInRoutes, openApiPaths: oidcSignInOpenApiPaths }, // browser sign-in: redirects
  { routes: mcpRoutes, openApiPaths: mcpOpenApiPaths }, // the MCP server: JSON-RPC over streamable HTTP
  { routes: fleetMetricsRoutes, openApiPaths: fleetMetricsOpenApiPaths }, // Prometheus text format
  { routes: configWebhookRoutes, openApiPaths: configWebhookOpenApiPaths }, // a Git host's signed push: the raw body's HMAC
  { routes: actionBundleRoutes, openApiPaths: actionBundleOpenApiPaths }, // a device's diagnostics bundle upload: binary body
  { routes: systemBundleRoutes, openApiPaths: systemBundleOpenApiPaths }, // an oci:// RAUC bundle relayed to a device: binary, Range
  { routes: deviceActionBundleRoutes, openApiPaths: deviceActionBundleOpenApiPaths }, // the bundle's tar.gz download
  { routes: remoteRecordingRoutes, openApiPaths: remoteRecordingOpenApiPaths }, // a shell session's asciicast
];

/** The plain routes' routers, to mount under /api/v1 before the REST facade (their paths are disjoint). */
export function plainRoutes(services: Services): Router[] {
  return PLAIN_ROUTES.map((p) => p.routes(services));
}

export const extraOpenApiPaths: ExtraPaths = Object.assign({}, ...PLAIN_ROUTES.map((p) => p.openApiPaths));

/**
 * The lean heartbeat route (src/modules/agent/heartbeat-route.ts): mounted on the app itself,
 * after the rate limiter and the request boundary but before tRPC and everything else under
 * /api/v1, so the busiest operation passes no other router. The agent.heartbeat procedure
 * documents its path.
 */
export function mountLeanAgentRoute(app: Express, services: Services): void {
  app.post(`/api/v1${AGENT_HEARTBEAT_PATH}`, agentHeartbeatRoute(services));
}

/**
 * The heartbeat's front door (src/http/front-door.ts): in front of the app's router, it
 * answers the usual heartbeat with the same steps as the ordinary path and hands every other
 * request on. Not mounted when the procedure declares ingest admission or lossy text.
 */
export function mountFrontDoor(app: Express, services: Services, common: FrontDoorCommon): void {
  const meta = procedureMetas().find(([path]) => path === HEARTBEAT_PROCEDURE)?.[1];
  const door = frontDoor(services, { path: `/api/v1${AGENT_HEARTBEAT_PATH}`, procedure: HEARTBEAT_PROCEDURE, meta, answer: heartbeatAnswer(services) }, common);
  if (door) putInFront(app, door);
}

/**
 * The read-only registry proxy devices pull their organization's private images through with a
 * pull grant (src/modules/agent/pull-proxy-route.ts): at /v2, where engines look for a registry's
 * API, so outside /api/v1. `before`: the rate limiter.
 */
export function mountRegistryPullProxy(app: Express, services: Services, ...before: RequestHandler[]): void {
  app.use(PULL_PROXY_PATH, ...before, pullProxyRoutes(services));
}
