// OpenTelemetry traces (docs/observability.md, "Traces"): the service's build started with
// OTEL_EXPORTER_OTLP_ENDPOINT naming an OTLP/HTTP receiver on loopback. One authenticated read
// and one call that reaches an outside server (an OCI registry's health check, a loopback
// server standing in for the registry) give: the request span with the request id of the
// response, the procedure span as its child, SQL spans under it, the outbound span whose
// traceparent reached the registry, and none of the secrets used anywhere in what was exported.
// Nothing sampled (always_off): the same calls work, send no traceparent, export nothing.
// Off (OTEL_SDK_DISABLED=true, the endpoint still set): no export, and no OpenTelemetry SDK
// module loaded (a module-resolution hook preloaded into the process logs every one).
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADMIN_EMAIL, ADMIN_KEY, ADMIN_PASSWORD } from "../../support/harness.js";
import { eventually, spawnService, type ServerProcess } from "../../support/server-process.js";
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from "./otlp-receiver.js";

const HOOK = path.join(path.dirname(fileURLToPath(import.meta.url)), "module-log.mjs");
const REGISTRY_PASSWORD = "registry-pass-Q7w3E9r1";
const COOKIE_VALUE = "cookie-secret-Z8x2C4v6";
const QUERY_TOKEN = "query-token-M5n7B9v1";
const SERVER = 2;
const CLIENT = 3;

/** A registry's /v2/ that records the headers it was sent. */
async function startRegistryStandIn() {
  const seen: http.IncomingHttpHeaders[] = [];
  const server = http.createServer((req, res) => {
    seen.push(req.headers);
    res.writeHead(200, { "content-type": "application/json", "docker-distribution-api-version": "registry/2.0" }).end("{}");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen, close: () => new Promise<void>((r) => server.close(() => r())) };
}

function bootstrapEnv(): Record<string, string> {
  return { BOOTSTRAP_ADMIN_EMAIL: ADMIN_EMAIL, BOOTSTRAP_ADMIN_PASSWORD: ADMIN_PASSWORD, BOOTSTRAP_API_KEY: ADMIN_KEY };
}

function loggedModules(file: string): string[] {
  return fs.existsSync(file) ? fs.readFileSync(file, "utf8").split("\n").filter(Boolean) : [];
}

/** The @opentelemetry packages other than the API (which prom-client requires by itself). */
const sdkModules = (urls: string[]) => [...new Set(urls.map((u) => /\/@opentelemetry\/([^/]+)\//.exec(u)?.[1]).filter((p): p is string => !!p && p !== "api"))];

describe("traces on: OTEL_EXPORTER_OTLP_ENDPOINT set", () => {
  let receiver: OtlpReceiver;
  let registry: Awaited<ReturnType<typeof startRegistryStandIn>>;
  let p: ServerProcess;
  const moduleLog = path.join(os.tmpdir(), `fleet-otel-modules-on-${process.pid}.log`);

  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    registry = await startRegistryStandIn();
    p = await spawnService("tracing-on", {
      ...bootstrapEnv(),
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_EXPORTER_OTLP_HEADERS: "x-collector-tenant=fleet-tests",
      OTEL_SERVICE_NAME: "fleet-manager-under-test",
      OTEL_BSP_SCHEDULE_DELAY: "200",
      NODE_OPTIONS: `--import ${HOOK}`,
      MODULE_LOG: moduleLog,
    }, { database: "migrated", defaultKey: ADMIN_KEY });
  }, 120_000);
  afterAll(async () => {
    await p?.kill();
    await registry?.close();
    await receiver?.close();
    fs.rmSync(moduleLog, { force: true });
  });

  const spansOfTrace = (traceId: string) => receiver.spans().filter((s) => s.traceId === traceId);
  const descendants = (all: ReceivedSpan[], root: ReceivedSpan): ReceivedSpan[] => {
    const children = all.filter((s) => s.parentSpanId === root.spanId);
    return children.flatMap((c) => [c, ...descendants(all, c)]);
  };
  const requestSpanOf = (requestId: string) => receiver.spans().find((s) => s.kind === SERVER && s.attributes["fleet.request_id"] === requestId);

  it("exports a request's span, its procedure's span and the procedure's SQL statements, with the request id", async () => {
    // The API key (X-API-Key here, a bearer token on /readyz), a cookie, and a token in the
    // query string: none may be exported.
    expect((await p.api("GET", `/readyz?token=${QUERY_TOKEN}`, { key: null, token: ADMIN_KEY, headers: { cookie: `fleet_session=${COOKIE_VALUE}` } })).status).toBe(200);
    const res = await p.api("GET", `/api/v1/devices?limit=5&token=${QUERY_TOKEN}`);
    expect(res.status).toBe(200);
    const requestId = res.headers.get("x-request-id")!;
    expect(requestId).toBeTruthy();

    const request = await eventually(async () => requestSpanOf(requestId), 20_000, "the request's span at the receiver");
    expect(request.name).toBe("GET /api/v1/devices");
    expect(request.attributes).toMatchObject({ "http.request.method": "GET", "http.route": "/api/v1/devices", "http.response.status_code": 200 });
    expect(request.parentSpanId).toBe("");
    expect(request.resource["service.name"]).toBe("fleet-manager-under-test");

    const trace = await eventually(async () => {
      const all = spansOfTrace(request.traceId);
      const procedure = all.find((s) => s.parentSpanId === request.spanId && s.attributes["trpc.procedure"] !== undefined);
      const sql = procedure && descendants(all, procedure).filter((s) => s.attributes["db.system"] === "postgresql");
      return procedure && sql && sql.length > 0 ? { procedure, sql } : undefined;
    }, 20_000, "the procedure's span and its SQL spans");
    expect(trace.procedure.name).toBe(trace.procedure.attributes["trpc.procedure"]);
    expect(trace.procedure.name).toMatch(/^devices\./);
    expect(trace.procedure.attributes["trpc.type"]).toBe("query");
    for (const statement of trace.sql) {
      expect(statement.kind).toBe(CLIENT);
      expect(statement.attributes["db.operation"]).toMatch(/^[A-Z]+$/);
      expect(String(statement.attributes["db.statement"])).not.toContain("'");
    }
    // The devices read itself is among them.
    expect(trace.sql.some((s) => /\bDevice\b/.test(String(s.attributes["db.statement"])))).toBe(true);
    // Each export carries the OTEL_EXPORTER_OTLP_HEADERS header, as protobuf.
    expect(receiver.requests.find((r) => r.path === "/v1/traces")?.headers).toMatchObject({ "x-collector-tenant": "fleet-tests", "content-type": "application/x-protobuf" });
  });

  it("exports an outbound call as a client span under its request, and sends its traceparent to the server called", async () => {
    const created = await p.api("POST", "/api/v1/registries/oci", {
      body: { name: "Traced registry", url: registry.url, authType: "BASIC", credential: `robot:${REGISTRY_PASSWORD}` },
    });
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    const check = await p.api("POST", `/api/v1/registries/oci/${id}/health-check`);
    expect(check.status).toBe(200);
    expect(check.body.healthStatus).toBe("healthy");
    const requestId = check.headers.get("x-request-id")!;

    const request = await eventually(async () => requestSpanOf(requestId), 20_000, "the health check's request span");
    expect(request.name).toBe("POST /api/v1/registries/oci/{id}/health-check");
    const outbound = await eventually(async () => {
      const all = spansOfTrace(request.traceId);
      return descendants(all, request).find((s) => s.kind === CLIENT && s.attributes["http.request.method"] === "GET" && s.attributes["server.address"] === "127.0.0.1");
    }, 20_000, "the outbound span");
    expect(outbound.attributes).toMatchObject({ "http.response.status_code": 200, "url.scheme": "http", "server.port": Number(new URL(registry.url).port) });
    // W3C trace context: version-traceid-parentid(the outbound span)-flags.
    const sent = registry.seen.map((h) => h.traceparent);
    expect(sent).toContain(`00-${request.traceId}-${outbound.spanId}-01`);
    // The credential went to the registry, not into the trace (checked with the rest below).
    expect(registry.seen.some((h) => String(h.authorization).startsWith("Basic "))).toBe(true);

    // Nothing secret and nothing from the URL's path in all that was exported: the API key
    // (sent as X-API-Key and as a bearer token), the cookie, the query string's token, the
    // registry's password (also as the Basic header's base64), the registry's id (a path
    // parameter and an SQL parameter).
    const exported = Buffer.concat(receiver.bodies).toString("latin1");
    expect(receiver.bodies.length).toBeGreaterThan(0);
    for (const secret of [ADMIN_KEY, ADMIN_KEY.slice(3, 20), COOKIE_VALUE, QUERY_TOKEN, REGISTRY_PASSWORD, Buffer.from(`robot:${REGISTRY_PASSWORD}`).toString("base64"), id]) {
      expect(exported.includes(secret), `exported spans hold ${secret.slice(0, 6)}...`).toBe(false);
    }
  });

  it("loaded the SDK (what the tracing-off test checks is absent)", () => {
    expect(sdkModules(loggedModules(moduleLog))).toEqual(expect.arrayContaining(["sdk-trace", "exporter-trace-otlp-proto"]));
  });
});

describe("traces on, nothing sampled: OTEL_TRACES_SAMPLER=always_off", () => {
  it("serves requests, procedures and outbound calls as usual and exports nothing", async () => {
    const receiver = await startOtlpReceiver();
    const registry = await startRegistryStandIn();
    let p: ServerProcess | undefined;
    try {
      p = await spawnService("tracing-unsampled", {
        ...bootstrapEnv(), OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_TRACES_SAMPLER: "always_off", OTEL_BSP_SCHEDULE_DELAY: "200",
      }, { database: "migrated", defaultKey: ADMIN_KEY });
      expect(p.output.some((line) => line.includes("tracing on"))).toBe(true);
      expect((await p.api("GET", "/api/v1/devices")).status).toBe(200);
      const created = await p.api("POST", "/api/v1/registries/oci", { body: { name: "Unsampled", url: registry.url, authType: "NONE" } });
      expect(created.status).toBe(201);
      const check = await p.api("POST", `/api/v1/registries/oci/${created.body.id}/health-check`);
      expect(check.body.healthStatus).toBe("healthy");
      // An unsampled request sets up no trace context: no traceparent leaves with its calls.
      expect(registry.seen.length).toBeGreaterThan(0);
      expect(registry.seen.every((h) => h.traceparent === undefined)).toBe(true);
      expect(await p.stop()).toBe(0);
      expect(receiver.requests).toEqual([]);
    } finally {
      await p?.kill();
      await registry.close();
      await receiver.close();
    }
  }, 120_000);
});

describe("traces off: OTEL_SDK_DISABLED=true", () => {
  it("exports nothing and loads no OpenTelemetry SDK module", async () => {
    const receiver = await startOtlpReceiver();
    const moduleLog = path.join(os.tmpdir(), `fleet-otel-modules-off-${process.pid}.log`);
    let p: ServerProcess | undefined;
    try {
      p = await spawnService("tracing-off", {
        ...bootstrapEnv(),
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_SDK_DISABLED: "true",
        OTEL_BSP_SCHEDULE_DELAY: "200",
        NODE_OPTIONS: `--import ${HOOK}`,
        MODULE_LOG: moduleLog,
      }, { database: "migrated", defaultKey: ADMIN_KEY });
      expect((await p.api("GET", "/api/v1/devices")).status).toBe(200);
      expect(await p.stop()).toBe(0); // a stop flushes whatever a tracer would have buffered
      expect(receiver.requests).toEqual([]);
      expect(sdkModules(loggedModules(moduleLog))).toEqual([]);
      // The hook did run in that process: it logs the API prom-client imports, if by import.
      expect(p.output.some((line) => line.includes("tracing on"))).toBe(false);
    } finally {
      await p?.kill();
      await receiver.close();
      fs.rmSync(moduleLog, { force: true });
    }
  }, 120_000);
});
