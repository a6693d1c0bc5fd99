// The REST facade as a third party meets it: GET /api/v1/openapi.json taken through tools
// nobody here wrote. @apidevtools/swagger-parser validates the document (OpenAPI schema and
// $refs); openapi-typescript turns it into types (in memory, at test time) that an
// openapi-fetch client is type-checked against; the same client, untyped, calls the spec
// operations on a running service and ajv checks every answer (successes and errors) against
// the schema the document declares for that operation and status.
import crypto from "node:crypto";
import path from "node:path";
import { fileURLToPath } from "node:url";
import SwaggerParser from "@apidevtools/swagger-parser";
import { Ajv as Ajv07, type ErrorObject, type ValidateFunction } from "ajv";
import { Ajv2020 } from "ajv/dist/2020.js";
import * as ajvFormats from "ajv-formats";
import createClient, { type Client } from "openapi-fetch";
import openapiTS, { astToString } from "openapi-typescript";
import ts from "typescript";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { JobRunner } from "../../../src/jobs/index.js";
import { marketplaceJobs } from "../../../src/modules/marketplace/jobs.js";
import { ADMIN_EMAIL, ADMIN_KEY, ADMIN_PASSWORD, createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { startOciRegistry, type OciRegistryServer } from "../../support/oci-registry.js";
import { peerAvailable } from "../../support/peers.js";
import { createEnrollmentToken, enroll, ensureCa, insertDevices } from "../agent/fleet-support.js";
import { appYaml } from "../registries-git/support.js";

type Json = any;
type Method = "get" | "put" | "post" | "delete" | "patch";

let h: Harness;
let acme: Tenant;
let globex: Tenant;
let docUrl: string;
/** where the document says the API is: servers[0].url resolved against the document's own URL */
let baseUrl: string;
/** the document exactly as served */
let served: Json;
/** the same with every $ref resolved by swagger-parser */
let deref: Json;
let validators: Ajv2020 | Ajv07;
/** openapi-fetch clients: untyped here (the types are generated at test time, see "typed client") */
let acmeClient: Client<Json>;
let adminBearerClient: Client<Json>;

beforeAll(async () => {
  h = await createHarness();
  [acme, globex] = await Promise.all([h.createTenant("Acme Conformance"), h.createTenant("Globex Conformance")]);

  docUrl = `${h.url}/api/v1/openapi.json`;
  const res = await fetch(docUrl); // no credentials: third-party tooling fetches it as is
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toMatch(/^application\/json/);
  served = await res.json();
  deref = await SwaggerParser.dereference(structuredClone(served));
  validators = schemaValidator(String(served.openapi));

  baseUrl = new URL(served.servers?.[0]?.url ?? "/", docUrl).href.replace(/\/$/, "");
  acmeClient = createClient<Json>({ baseUrl, headers: { "X-API-Key": acme.key } });
  const adminToken = await h.login(ADMIN_EMAIL, ADMIN_PASSWORD);
  adminBearerClient = createClient<Json>({ baseUrl, headers: { Authorization: `Bearer ${adminToken}` } });

  // Devices with labels for ops 12 and 14; an active tenant switch for op 17.
  await insertDevices(h, acme.org.id, [
    { status: "online", labels: { site: "berlin", tier: "edge", "hw/model": "pi 5" } },
    { status: "offline", labels: { site: "berlin", tier: "core" } },
    { status: "error", labels: { site: "paris", tier: "edge" } },
    { status: "pending", labels: { tier: "edge" } },
    { status: "provisioned", labels: { site: "paris" } },
  ]);
  const sw = await h.api("POST", "/api/v1/tenant/switch", { key: null, token: adminToken, body: { organizationId: globex.org.id, reason: "conformance" } });
  expect(sw.status, sw.text).toBe(200);
}, 120_000);

afterAll(async () => {
  await h?.close();
});

// ---------------------------------------------------------------------------------------------
// JSON Schema checks with ajv, in the dialect of the document's OpenAPI version.

function schemaValidator(openapi: string): Ajv2020 | Ajv07 {
  const addFormats = ((ajvFormats as Json).default ?? ajvFormats) as (ajv: Ajv2020 | Ajv07) => void;
  // OpenAPI 3.1: JSON Schema 2020-12 plus the OAS base vocabulary's own annotation keywords.
  // OpenAPI 3.0: the draft-04/07-like subset, whose `nullable` ajv understands.
  const ajv = openapi.startsWith("3.1.")
    ? new Ajv2020({ allErrors: true, strict: true, allowUnionTypes: true, validateFormats: true })
    : openapi.startsWith("3.0.")
      ? new Ajv07({ allErrors: true, strict: true, allowUnionTypes: true, validateFormats: true })
      : null;
  if (!ajv) throw new Error(`unsupported OpenAPI version ${openapi}`);
  ajv.addVocabulary(["example", "discriminator", "xml", "externalDocs"]);
  addFormats(ajv);
  return ajv;
}

const compiled = new WeakMap<object, ValidateFunction>();
function violations(schema: object, body: unknown): string[] {
  let validate = compiled.get(schema);
  if (!validate) compiled.set(schema, (validate = validators.compile(schema)));
  if (validate(body)) return [];
  return (validate.errors ?? []).map((e: ErrorObject) => `${e.instancePath || "(root)"} ${e.message} ${JSON.stringify(e.params)} [schema ${e.schemaPath}]`);
}

/** The JSON schema the document declares for an operation's response with `status`. */
function declaredResponse(method: Method, template: string, status: number): object {
  const operation = deref.paths?.[template]?.[method];
  expect(operation, `${method.toUpperCase()} ${template} is in the document`).toBeTruthy();
  const responses = operation.responses ?? {};
  const response = responses[String(status)] ?? responses[`${String(status)[0]}XX`] ?? responses.default;
  expect(response, `${method.toUpperCase()} ${template} declares a response for status ${status} (declared: ${Object.keys(responses).join(", ")})`).toBeTruthy();
  const schema = response.content?.["application/json"]?.schema;
  expect(schema, `${method.toUpperCase()} ${template} ${status} declares an application/json schema`).toBeTruthy();
  return schema;
}

/** The JSON schema of an operation's request body. */
function declaredRequest(method: Method, template: string): object {
  const schema = deref.paths?.[template]?.[method]?.requestBody?.content?.["application/json"]?.schema;
  expect(schema, `${method.toUpperCase()} ${template} declares an application/json request body`).toBeTruthy();
  return schema;
}

interface FetchResult {
  data?: unknown;
  error?: unknown;
  response: Response;
}

/**
 * Asserts the status, then that the body (openapi-fetch's `data` or `error`) matches what the
 * document declares for that operation and status; returns the body.
 */
function expectConforming(method: Method, template: string, result: FetchResult, status: number): Json {
  const { response } = result;
  const body = response.ok ? result.data : result.error;
  const label = `${method.toUpperCase()} ${template} -> ${response.status}`;
  expect(response.status, `${label}: ${JSON.stringify(body)}`).toBe(status);
  expect(response.headers.get("content-type"), label).toMatch(/^application\/json/);
  expect(violations(declaredResponse(method, template, status), body), `${label}: body vs the declared schema\n${JSON.stringify(body)}`).toEqual([]);
  return body;
}

// ---------------------------------------------------------------------------------------------

describe("the served document", () => {
  it("is OpenAPI 3.x and passes @apidevtools/swagger-parser validate() (schema, spec rules, $refs)", async () => {
    expect(String(served.openapi)).toMatch(/^3\.[01]\.\d+$/);
    let failure: string | undefined;
    try {
      await SwaggerParser.validate(structuredClone(served));
    } catch (err) {
      const e = err as Error & { details?: unknown };
      failure = `${e.message}\n${JSON.stringify(e.details ?? null, null, 1)}`;
    }
    expect(failure).toBeUndefined();
    // The validator does check this document's version: a response without its required
    // description, or a dangling $ref, is refused.
    const broken = structuredClone(served);
    delete broken.paths["/organizations/by-slug/{slug}"].get.responses["200"].description;
    await expect(SwaggerParser.validate(broken)).rejects.toThrow(/must have required property 'description'/);
    const dangling = structuredClone(served);
    dangling.paths["/organizations/by-slug/{slug}"].get.responses["404"] = { description: "x", content: { "application/json": { schema: { $ref: "#/components/schemas/nope" } } } };
    await expect(SwaggerParser.validate(dangling)).rejects.toThrow(/Missing \$ref pointer/);
  });

  it("documents every method and path of the spec's Endpoints table (ops 1-20)", () => {
    const SPEC_OPERATIONS: Array<[Method, string]> = [
      ["get", "/marketplace-store/sync-history"], ["post", "/registries/oci"], ["post", "/organizations/{id}/disable"],
      ["post", "/activity/export"], ["get", "/organizations/by-slug/{slug}"], ["get", "/registries/git/{id}"],
      ["post", "/registries/git/{id}/enable"], ["patch", "/organizations/{id}"], ["post", "/organizations/{orgId}/api-keys"],
      ["get", "/global-registries/oci/{id}"], ["get", "/devices/{id}/telemetry"], ["post", "/groups/query"],
      ["get", "/devices/{id}/telemetry/latest"], ["get", "/groups/by-label/{key}"], ["get", "/organizations/{orgId}/api-keys/{id}"],
      ["get", "/devices/{deviceId}/certificates/{certificateId}"], ["get", "/tenant/switches/active"],
      ["put", "/organizations/{orgId}/members/{userId}/role"], ["patch", "/ca-certificates/{id}/default"], ["post", "/registries/git/{id}/sync"],
    ];
    expect(served.servers?.[0]?.url).toBe("/api/v1");
    const missing = SPEC_OPERATIONS.filter(([m, p]) => !served.paths?.[p]?.[m]).map(([m, p]) => `${m.toUpperCase()} ${p}`);
    expect(missing).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------------
// The spec operations on the running service, through openapi-fetch, bodies checked by ajv.

describe("spec operations called with openapi-fetch, bodies validated against the document", () => {
  it("op 5 GET /organizations/by-slug/{slug}: 200 organization", async () => {
    const res = await acmeClient.GET("/organizations/by-slug/{slug}", { params: { path: { slug: acme.org.slug } } });
    const body = expectConforming("get", "/organizations/by-slug/{slug}", res, 200);
    expect(body).toMatchObject({ id: acme.org.id, slug: acme.org.slug, name: acme.org.name, status: "active", active: true });
    // ajv does hold the service to the schema: a status outside the enum, a missing field are refused.
    const schema = declaredResponse("get", "/organizations/by-slug/{slug}", 200);
    expect(violations(schema, { ...body, status: "archived" })).toEqual([expect.stringContaining("/status must be equal to one of the allowed values")]);
    expect(violations(schema, { ...body, slug: undefined })).toEqual([expect.stringContaining("must have required property 'slug'")]);
  });

  it("op 9 POST /organizations/{orgId}/api-keys: 201 with the key; op 15 GET .../api-keys/{id}: 200 without it", async () => {
    const expiresAt = new Date(Date.now() + 86_400_000).toISOString();
    const requestBody = { name: "conformance key", description: "openapi-fetch", permissions: ["devices:read"], expiresAt };
    expect(violations(declaredRequest("post", "/organizations/{orgId}/api-keys"), requestBody)).toEqual([]);
    const created = await acmeClient.POST("/organizations/{orgId}/api-keys", { params: { path: { orgId: acme.org.id } }, body: requestBody });
    const key = expectConforming("post", "/organizations/{orgId}/api-keys", created, 201);
    expect(key).toMatchObject({ name: "conformance key", description: "openapi-fetch", permissions: ["devices:read"], expiresAt });
    expect(key.key.slice(0, 8)).toBe(key.keyPrefix);

    const read = await acmeClient.GET("/organizations/{orgId}/api-keys/{id}", { params: { path: { orgId: acme.org.id, id: key.id } } });
    const got = expectConforming("get", "/organizations/{orgId}/api-keys/{id}", read, 200);
    expect(got).toMatchObject({ id: key.id, keyPrefix: key.keyPrefix, permissions: ["devices:read"] });
    expect(got).not.toHaveProperty("key");
  });

  it("op 2 POST /registries/oci: 201 registry, credential never returned", async () => {
    const requestBody = { name: "Conformance OCI", url: "https://registry.example.com", authType: "BASIC", credential: "robot:s3cret-pull", repositories: ["edge/app"] };
    expect(violations(declaredRequest("post", "/registries/oci"), requestBody)).toEqual([]);
    const res = await acmeClient.POST("/registries/oci", { body: requestBody });
    const body = expectConforming("post", "/registries/oci", res, 201);
    expect(body).toMatchObject({ organizationId: acme.org.id, name: "Conformance OCI", registryType: "GENERIC", authType: "BASIC", hasCredentials: true, verifyTls: true, enabled: true, repositories: ["edge/app"] });
    expect(JSON.stringify(body)).not.toContain("s3cret-pull");
  });

  it("op 12 POST /groups/query: 200 counts by status", async () => {
    const res = await acmeClient.POST("/groups/query", { body: { labelSelector: { site: "berlin" } } });
    const body = expectConforming("post", "/groups/query", res, 200);
    expect(body).toEqual({ total: 2, byStatus: { online: 1, offline: 1, pending: 0, error: 0, provisioned: 0 }, byArchitecture: { unknown: 2 }, labelSelector: { site: "berlin" } });
  });

  it("op 14 GET /groups/by-label/{key}: 200 groups (also for a key that openapi-fetch percent-encodes)", async () => {
    const res = await acmeClient.GET("/groups/by-label/{key}", { params: { path: { key: "site" } } });
    const body = expectConforming("get", "/groups/by-label/{key}", res, 200);
    expect(body.labelKey).toBe("site");
    expect(body.total).toBe(4);
    expect(body.groups.map((g: { value: string; count: number }) => [g.value, g.count]).sort()).toEqual([["berlin", 2], ["paris", 2]]);
    const slash = await acmeClient.GET("/groups/by-label/{key}", { params: { path: { key: "hw/model" } } });
    expect(expectConforming("get", "/groups/by-label/{key}", slash, 200)).toMatchObject({ labelKey: "hw/model", total: 1 });
  });

  it("op 17 GET /tenant/switches/active (bearer token): 200 page of active switches", async () => {
    const res = await adminBearerClient.GET("/tenant/switches/active", { params: { query: { limit: 10, offset: 0 } } });
    const body = expectConforming("get", "/tenant/switches/active", res, 200);
    expect(body.total).toBe(1);
    expect(body.hasMore).toBe(false);
    expect(body.items[0]).toMatchObject({ toOrgId: globex.org.id, reason: "conformance", isActive: true });
  });

  // Op 1 reads the history of a real marketplace sync, run here against docker-registry (skipped
  // without it), in a tenant of its own so that no other test's registries join the sync.
  describe.skipIf(!peerAvailable("docker-registry"))("op 1, after a marketplace sync from a real registry", () => {
    let registry: OciRegistryServer;
    let market: Tenant;
    beforeAll(async () => {
      [registry, market] = await Promise.all([startOciRegistry(), h.createTenant("Market Conformance")]);
      // A package imported, a plain image skipped (with its reason).
      await registry.pushPackage("edge/vision", "1.0.0", appYaml("vision", "1.0.0", { name: "Vision" }));
      await registry.pushImage("edge/vision", "latest");
      const own = await h.api("POST", "/api/v1/registries/oci", { key: market.key, body: { name: "Conformance edge", url: registry.url, repositories: ["edge/vision"] } });
      expect(own.status, own.text).toBe(201);
      const store = await h.api("PUT", "/api/v1/marketplace-store", { key: market.key, body: {} });
      expect(store.status, store.text).toBe(201);
      const queued = await h.api("POST", "/api/v1/marketplace-store/sync", { key: market.key });
      expect(queued.status, queued.text).toBe(202);
      await h.services.prisma.$executeRaw`UPDATE "Job" SET "runAt" = '2000-01-01' WHERE "state" = 'pending'`;
      const runner = new JobRunner(h.services, { ...marketplaceJobs(), concurrency: 1, workerId: "openapi-conformance" });
      expect(await runner.drain()).toBe(1);
    }, 60_000);
    afterAll(async () => {
      await registry?.close();
    });

    it("op 1 GET /marketplace-store/sync-history?limit=10&offset=0: 200 with the per-product breakdown", async () => {
      const client = createClient<Json>({ baseUrl, headers: { "X-API-Key": market.key } });
      const res = await client.GET("/marketplace-store/sync-history", { params: { query: { limit: "10", offset: "0" } } });
      const body = expectConforming("get", "/marketplace-store/sync-history", res, 200);
      expect(body.total).toBe(1);
      expect(body.data[0]).toMatchObject({ organizationId: market.org.id, scope: "tenant", status: "success", applicationsImported: 1, triggeredBy: market.user.id });
      const outcomes = Object.fromEntries(body.data[0].products.map((p: { tag: string; outcome: string }) => [p.tag, p.outcome]));
      expect(outcomes).toEqual({ "1.0.0": "imported", latest: "skipped" });
      expect(body.data[0].products.find((p: { tag: string }) => p.tag === "latest").reason).toEqual(expect.any(String));
    });
  });
});

describe("error responses validated against the document's declared error schemas", () => {
  it("400 (op 9, name too short) matches the declared 400 schema", async () => {
    const requestBody = { name: "x" };
    // The document itself says this body is invalid (minLength 2) ...
    expect(violations(declaredRequest("post", "/organizations/{orgId}/api-keys"), requestBody)).not.toEqual([]);
    // ... and the service refuses it with the declared error body.
    const res = await acmeClient.POST("/organizations/{orgId}/api-keys", { params: { path: { orgId: acme.org.id } }, body: requestBody });
    const body = expectConforming("post", "/organizations/{orgId}/api-keys", res, 400);
    expect(body.code).toBe("BAD_REQUEST");
  });

  it("400 (op 2, unknown authType) matches the declared 400 schema", async () => {
    const requestBody = { name: "Bad auth", url: "https://registry.example.com", authType: "DIGEST" };
    expect(violations(declaredRequest("post", "/registries/oci"), requestBody)).not.toEqual([]);
    const res = await acmeClient.POST("/registries/oci", { body: requestBody });
    expect(expectConforming("post", "/registries/oci", res, 400).code).toBe("BAD_REQUEST");
  });

  it("404 (op 5 unknown slug, op 15 unknown key id) matches the declared 404 schema", async () => {
    const bySlug = await acmeClient.GET("/organizations/by-slug/{slug}", { params: { path: { slug: "no-such-organization" } } });
    expect(expectConforming("get", "/organizations/by-slug/{slug}", bySlug, 404).code).toBe("NOT_FOUND");
    const key = await acmeClient.GET("/organizations/{orgId}/api-keys/{id}", { params: { path: { orgId: acme.org.id, id: crypto.randomUUID() } } });
    expect(expectConforming("get", "/organizations/{orgId}/api-keys/{id}", key, 404).code).toBe("NOT_FOUND");
  });

  it("401 (op 5 without credentials) matches the declared 401 schema", async () => {
    const anonymous = createClient<Json>({ baseUrl });
    const res = await anonymous.GET("/organizations/by-slug/{slug}", { params: { path: { slug: acme.org.slug } } });
    expect(expectConforming("get", "/organizations/by-slug/{slug}", res, 401).code).toBe("UNAUTHORIZED");
  });

  it("declares the statuses the service answers for the spec's error outcomes of ops 2, 3, 7, 20 (and the bodies match)", async () => {
    const adminClient = createClient<Json>({ baseUrl, headers: { "X-API-Key": ADMIN_KEY } });
    const victim = await h.createTenant("Disable Conformance");
    const git = await h.api("POST", "/api/v1/registries/git", { key: acme.key, body: { name: "Disabled git", url: "https://git.example.com/fleet.git", enabled: false } });
    expect(git.status, git.text).toBe(201);
    const unknown = crypto.randomUUID();
    const registry = { name: "Twice", url: "https://registry.example.com" };
    expect((await acmeClient.POST("/registries/oci", { body: registry })).response.status).toBe(201);
    expect((await adminClient.POST("/organizations/{id}/disable", { params: { path: { id: victim.org.id } }, body: {} })).response.status).toBe(200);

    const cases: Array<[string, Method, string, number, () => Promise<FetchResult>]> = [
      ["op 2 conflict on name", "post", "/registries/oci", 409, () => acmeClient.POST("/registries/oci", { body: registry })],
      ["op 3 not found", "post", "/organizations/{id}/disable", 404, () => adminClient.POST("/organizations/{id}/disable", { params: { path: { id: unknown } }, body: {} })],
      ["op 3 already disabled", "post", "/organizations/{id}/disable", 409, () => adminClient.POST("/organizations/{id}/disable", { params: { path: { id: victim.org.id } }, body: {} })],
      ["op 7 not found", "post", "/registries/git/{id}/enable", 404, () => acmeClient.POST("/registries/git/{id}/enable", { params: { path: { id: unknown } } })],
      ["op 20 not found", "post", "/registries/git/{id}/sync", 404, () => acmeClient.POST("/registries/git/{id}/sync", { params: { path: { id: unknown } } })],
      ["op 20 registry disabled", "post", "/registries/git/{id}/sync", 409, () => acmeClient.POST("/registries/git/{id}/sync", { params: { path: { id: git.body.id } } })],
    ];
    const problems: string[] = [];
    for (const [outcome, method, template, status, call] of cases) {
      const res = await call();
      expect(res.response.status, `${outcome}: ${JSON.stringify(res.error)}`).toBe(status);
      const responses = deref.paths[template][method].responses;
      const schema = responses[String(status)]?.content?.["application/json"]?.schema;
      if (!schema) problems.push(`${outcome}: ${method.toUpperCase()} ${template} answers ${status}, the document declares only ${Object.keys(responses).join(", ")}`);
      else problems.push(...violations(schema, res.error).map((v) => `${outcome}: ${v}`));
    }
    expect(problems).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------------
// Every operation of the document, walked: invalid input is named in `message`, and path
// parameters arrive percent-decoded.

const METHODS: Method[] = ["get", "put", "post", "delete", "patch"];
type Parameter = { in: string; name: string; required?: boolean; schema?: Json };
type Operation = { method: Method; template: string; parameters: Parameter[]; body?: Json };

function documentedOperations(): Operation[] {
  return Object.entries<Json>(deref.paths).flatMap(([template, item]) =>
    METHODS.filter((method) => item[method]).map((method) => ({
      method, template, parameters: item[method].parameters ?? [], body: item[method].requestBody?.content?.["application/json"]?.schema,
    })));
}

const isUuid = (schema: Json) => schema?.format === "uuid";
const isNumeric = (schema: Json): boolean => ["number", "integer"].includes(schema?.type) || (schema?.anyOf ?? schema?.oneOf ?? []).some(isNumeric);
/** Every character percent-encoded ("a-b" -> "%61%2D%62"): what the facade must decode. */
const encodeAll = (value: string) => [...Buffer.from(value, "utf8")].map((b) => `%${b.toString(16).toUpperCase().padStart(2, "0")}`).join("");

describe("every operation, walked from the document", () => {
  let bearer: string;
  let device: { token(): Promise<string> };
  beforeAll(async () => {
    bearer = await h.login(ADMIN_EMAIL, ADMIN_PASSWORD); // a Super Admin: every operation but the device's
    await ensureCa(h, acme.key);
    device = await enroll(h, (await createEnrollmentToken(h, acme.key)).token);
  }, 60_000);

  /** One call as its caller would make it: the device's own operations with the device's token, the rest as the Super Admin. */
  async function call(op: Operation, path: string, query = "", body?: unknown) {
    const token = op.template.startsWith("/agent/") && op.template !== "/agent/enroll" ? await device.token() : bearer;
    const res = await fetch(`${baseUrl}${path}${query}`, {
      method: op.method.toUpperCase(),
      // same-origin, as the console sends: the cross-site guard of the cookie sign-in answers before any input is read
      headers: { authorization: `Bearer ${token}`, "sec-fetch-site": "same-origin", ...(body !== undefined ? { "content-type": "application/json" } : {}) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    let json: Json;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    return { status: res.status, body: json, text };
  }

  /** The template with each path parameter filled: a fresh UUID for ids, a plausible string otherwise. */
  const filled = (op: Operation, value = (p: Parameter) => (isUuid(p.schema) ? crypto.randomUUID() : `x-${crypto.randomBytes(6).toString("hex")}`)) =>
    op.template.replace(/\{([^}]+)\}/g, (_m, name: string) => value(op.parameters.find((p) => p.in === "path" && p.name === name)!));

  it("names the field in `message` for every missing required body field and every numeric query parameter given a word (400, issues once)", async () => {
    const failures: string[] = [];
    let checked = 0;
    for (const op of documentedOperations()) {
      const label = `${op.method.toUpperCase()} ${op.template}`;
      const expectNamed = (res: { status: number; body: Json; text: string }, fields: string[], what: string) => {
        checked++;
        const message: string = res.body?.message ?? "";
        const unnamed = fields.filter((field) => !message.includes(`${field}: `));
        if (res.status !== 400 || unnamed.length) failures.push(`${label} ${what}: expected 400 naming ${unnamed.join(", ") || fields.join(", ")} in message, got ${res.status} ${res.text.slice(0, 200)}`);
        else if (!Array.isArray(res.body.issues) || res.body.data?.issues !== undefined) failures.push(`${label} ${what}: the issues belong at the top, once: ${res.text.slice(0, 200)}`);
      };
      const required: string[] = op.body?.required ?? [];
      if (required.length) expectNamed(await call(op, filled(op), "", {}), required, "with an empty body");
      for (const p of op.parameters.filter((p) => p.in === "query" && isNumeric(p.schema))) {
        expectNamed(await call(op, filled(op), `?${p.name}=abc`, op.body ? {} : undefined), [p.name], `with ?${p.name}=abc`);
      }
    }
    expect(checked).toBeGreaterThan(100);
    expect(failures, failures.join("\n")).toEqual([]);
  }, 300_000);

  it("says it in words: a CA without commonName, ?limit=abc (the examples of the report)", async () => {
    const ca = await h.api("POST", "/api/v1/ca-certificates/generate", { key: acme.key, body: { name: "No common name" } });
    expect(ca.status).toBe(400);
    expect(ca.body).toEqual({
      code: "BAD_REQUEST",
      message: "Invalid input: commonName: required",
      issues: [{ path: ["commonName"], message: "required", code: "invalid_type" }],
      data: { code: "BAD_REQUEST", httpStatus: 400, requestId: ca.headers.get("x-request-id") },
    });
    const limit = await h.api("GET", "/api/v1/devices?limit=abc", { key: acme.key });
    expect(limit.status).toBe(400);
    expect(limit.body.message).toBe("Invalid input: limit: must be a number");
    expect(violations(declaredResponse("get", "/devices", 400), limit.body)).toEqual([]);
  });

  it("hands every path parameter to the operation percent-decoded (each operation: an encoded id answers as the plain one)", async () => {
    const failures: string[] = [];
    const byString: string[] = [];
    let checked = 0;
    for (const op of documentedOperations()) {
      const params = op.parameters.filter((p) => p.in === "path");
      if (!params.length) continue;
      if (params.some((p) => !isUuid(p.schema))) byString.push(`${op.method} ${op.template}`);
      const values = new Map(params.map((p) => [p.name, isUuid(p.schema) ? crypto.randomUUID() : `x-${crypto.randomBytes(6).toString("hex")}`]));
      const body = op.body ? {} : undefined;
      const plain = await call(op, filled(op, (p) => values.get(p.name)!), "", body);
      const encoded = await call(op, filled(op, (p) => encodeAll(values.get(p.name)!)), "", body);
      checked++;
      if (plain.status !== encoded.status || plain.body?.message !== encoded.body?.message) {
        failures.push(`${op.method.toUpperCase()} ${op.template}: plain ${plain.status} ${plain.body?.message}, encoded ${encoded.status} ${encoded.body?.message}`);
      }
    }
    expect(checked).toBeGreaterThan(100);
    expect(failures, failures.join("\n")).toEqual([]);
    // A string parameter is not found either way: those are checked with real values below.
    expect(byString.sort()).toEqual([
      "delete /devices/{id}/labels/{key}", "get /agent/deployments/{deploymentId}/components/{component}",
      "get /agent/deployments/{deploymentId}/components/{component}/bundle", "get /audit/entity/{entityType}/{entityId}", "get /config-layers/{id}/revisions/{revision}", "get /groups/by-label/{key}",
      "get /groups/label-keys/{key}/values", "get /organizations/by-slug/{slug}", "get /public/invitations/{token}",
      "post /public/invitations/{token}/accept",
    ]);
  }, 300_000);

  it("finds what an encoded string parameter names: a slug, label keys with a slash, an audit entity, an invitation token, a revision number", async () => {
    const get = (path: string, key: string | null = acme.key) => h.api("GET", `/api/v1${path}`, { key });
    const layer = await h.api("POST", "/api/v1/config-layers", { key: acme.key, body: { name: "decoded", kind: "selector", selector: { decoded: "yes" }, order: 1, variables: { A: "1" } } });
    expect(layer.status, layer.text).toBe(201);
    const revision = await get(`/config-layers/${encodeAll(layer.body.id)}/revisions/${encodeAll("1")}`);
    expect(revision.status, revision.text).toBe(200);
    expect(revision.body).toMatchObject({ revision: 1, variables: { A: "1" } });

    const bySlug = await get(`/organizations/by-slug/${encodeAll(acme.org.slug)}`);
    expect(bySlug.status, bySlug.text).toBe(200);
    expect(bySlug.body.id).toBe(acme.org.id);

    const groups = await get(`/groups/by-label/${encodeAll("hw/model")}`);
    expect(groups.status, groups.text).toBe(200);
    expect(groups.body).toMatchObject({ labelKey: "hw/model", total: 1 });
    const values = await get(`/groups/label-keys/${encodeAll("hw/model")}/values`);
    expect(values.status, values.text).toBe(200);
    expect(JSON.stringify(values.body)).toContain("pi 5");

    const entry = (await get("/audit?limit=1")).body.items[0];
    const entity = await get(`/audit/entity/${encodeAll(entry.entityType)}/${encodeAll(entry.entityId)}`);
    expect(entity.status, entity.text).toBe(200);
    expect(entity.body.items.map((e: { id: string }) => e.id)).toContain(entry.id);

    const role = (await get("/roles?limit=200")).body.items.find((r: { name: string }) => /viewer/i.test(r.name));
    const invitation = await h.api("POST", "/api/v1/invitations", { key: acme.key, body: { email: `decoded-${crypto.randomBytes(3).toString("hex")}@example.test`, roleId: role.id } });
    expect(invitation.status, invitation.text).toBe(201);
    const invited = await get(`/public/invitations/${encodeAll(invitation.body.token)}`, null);
    expect(invited.status, invited.text).toBe(200);
    const accepted = await h.api("POST", `/api/v1/public/invitations/${encodeAll(invitation.body.token)}/accept`, { key: null, body: { name: "Decoded Person", password: "a-long-enough-password-1" } });
    expect(accepted.status, accepted.text).toBeLessThan(300);

    const labelled = await h.services.prisma.device.findFirstOrThrow({ where: { organizationId: acme.org.id, labels: { path: ["hw/model"], equals: "pi 5" } } });
    const removed = await h.api("DELETE", `/api/v1/devices/${labelled.id}/labels/${encodeAll("hw/model")}`, { key: acme.key });
    expect(removed.status, removed.text).toBe(200);
    expect((await h.services.prisma.device.findUniqueOrThrow({ where: { id: labelled.id } })).labels).not.toHaveProperty("hw/model");
  });
});

// ---------------------------------------------------------------------------------------------
// openapi-typescript + openapi-fetch, type-checked in memory with the TypeScript compiler.
// Last in the file on purpose: type generation and checking hold the event loop (which the
// service shares) for seconds, long enough for idle keep-alive sockets to time out under a request.

const here = path.dirname(fileURLToPath(import.meta.url));
const virtualDir = path.join(here, "__generated__"); // never written: served from memory

async function generatedTypes(): Promise<string> {
  return astToString(await openapiTS(structuredClone(served)));
}

/** Type-checks `usage` (importing `./api.js`, the generated types) against openapi-fetch's real typings. */
function typeCheck(api: string, usage: string): string[] {
  const files = new Map([[path.join(virtualDir, "api.d.ts"), api], [path.join(virtualDir, "usage.ts"), usage]]);
  const options: ts.CompilerOptions = {
    target: ts.ScriptTarget.ES2023, lib: ["lib.es2023.d.ts", "lib.dom.d.ts"], module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext, strict: true, noEmit: true, skipLibCheck: true, types: [],
  };
  const host = ts.createCompilerHost(options);
  const { fileExists, readFile, getSourceFile, directoryExists } = host;
  host.fileExists = (f) => files.has(f) || fileExists.call(host, f);
  host.readFile = (f) => files.get(f) ?? readFile.call(host, f);
  host.directoryExists = (d) => d === virtualDir || (directoryExists ? directoryExists.call(host, d) : true);
  host.getSourceFile = (f, language, ...rest) =>
    files.has(f) ? ts.createSourceFile(f, files.get(f)!, language) : getSourceFile.call(host, f, language, ...rest);
  const program = ts.createProgram([path.join(virtualDir, "usage.ts")], options, host);
  return ts.getPreEmitDiagnostics(program).map((d) => {
    const where = d.file && d.start !== undefined ? d.file.getLineAndCharacterOfPosition(d.start) : undefined;
    const line = where ? d.file!.text.split("\n")[where.line]?.trim() : "";
    return `${d.file ? path.basename(d.file.fileName) : ""}:${where ? where.line + 1 : "?"} ${ts.flattenDiagnosticMessageText(d.messageText, "\n")}  «${line}»`;
  });
}

const USAGE_HEADER = `
import createClient from "openapi-fetch";
import type { paths } from "./api.js";
const client = createClient<paths>({ baseUrl: "http://127.0.0.1/api/v1", headers: { "X-API-Key": "fm_x" } });
`;

describe("typed client (openapi-typescript + openapi-fetch)", () => {
  let api: string;
  beforeAll(async () => {
    api = await generatedTypes();
  }, 30_000);

  it("generates types for every path of the document", () => {
    expect(api).toMatch(/^export interface paths \{/m);
    for (const template of Object.keys(served.paths)) expect(api, template).toContain(`"${template}": {`);
  });

  it("types the calls and success bodies of ops 1, 2, 5, 9, 12, 14, 15, 17 (and rejects wrong calls)", () => {
    const usage = `${USAGE_HEADER}
export async function specOperations(orgId: string, id: string, slug: string) {
  // op 5
  const org = await client.GET("/organizations/by-slug/{slug}", { params: { path: { slug } } });
  if (org.data) {
    const status: "active" | "suspended" | "pending" | "disabled" = org.data.status;
    const active: boolean = org.data.active;
    const settings: Record<string, unknown> = org.data.settings;
  }
  // @ts-expect-error the slug path parameter is required
  await client.GET("/organizations/by-slug/{slug}", { params: { path: {} } });
  // op 9
  const created = await client.POST("/organizations/{orgId}/api-keys", { params: { path: { orgId } }, body: { name: "ci", permissions: ["devices:read"] } });
  if (created.data) {
    const key: string = created.data.key;
    const prefix: string = created.data.keyPrefix;
  }
  // @ts-expect-error name is required
  await client.POST("/organizations/{orgId}/api-keys", { params: { path: { orgId } }, body: { permissions: [] } });
  // op 15
  const read = await client.GET("/organizations/{orgId}/api-keys/{id}", { params: { path: { orgId, id } } });
  if (read.data) {
    const permissions: string[] = read.data.permissions;
    // @ts-expect-error the full key is returned by the creation only
    read.data.key;
  }
  // op 2
  const registry = await client.POST("/registries/oci", { body: { name: "edge", url: "https://registry.example", authType: "BASIC", credential: "u:p" } });
  if (registry.data) {
    const has: boolean = registry.data.hasCredentials;
    const repositories: string[] = registry.data.repositories;
    // @ts-expect-error the credential is never returned
    registry.data.credential;
  }
  // @ts-expect-error authType is NONE, BASIC or TOKEN
  await client.POST("/registries/oci", { body: { name: "edge", url: "https://registry.example", authType: "DIGEST" } });
  // op 12
  const query = await client.POST("/groups/query", { body: { labelSelector: { site: "berlin" } } });
  if (query.data) {
    const total: number = query.data.total;
    const online: number = query.data.byStatus.online;
  }
  // @ts-expect-error label values are strings
  await client.POST("/groups/query", { body: { labelSelector: { site: 1 } } });
  // op 14
  const byLabel = await client.GET("/groups/by-label/{key}", { params: { path: { key: "site" } } });
  if (byLabel.data) {
    const value: string | undefined = byLabel.data.groups[0]?.value;
    const count: number | undefined = byLabel.data.groups[0]?.count;
  }
  // op 17
  const switches = await client.GET("/tenant/switches/active", { params: { query: { limit: 10, offset: 0 } } });
  if (switches.data) {
    const isActive: boolean | undefined = switches.data.items[0]?.isActive;
    const hasMore: boolean = switches.data.hasMore;
  }
  // op 1
  const history = await client.GET("/marketplace-store/sync-history", { params: { query: { limit: "10", offset: "0" } } });
  if (history.data) {
    const reason: string | undefined = history.data.data[0]?.products[0]?.reason;
    const next: string | undefined = history.data.nextCursor;
  }
  // @ts-expect-error limit and offset are both required
  await client.GET("/marketplace-store/sync-history", { params: { query: { limit: "10" } } });
  // error bodies carry a message and a code
  if (org.error) {
    const message: string = org.error.message;
    const code: string = org.error.code;
  }
}
`;
    expect(typeCheck(api, usage)).toEqual([]);
    // The check itself can fail: a wrong assignment is reported.
    expect(typeCheck(api, `${USAGE_HEADER}\nexport async function f(slug: string) { const r = await client.GET("/organizations/by-slug/{slug}", { params: { path: { slug } } }); if (r.data) { const n: number = r.data.slug; } }\n`))
      .toEqual([expect.stringContaining("Type 'string' is not assignable to type 'number'")]);
  });

  it("lets a client read the error fields the document's own description promises ({ code, message, issues?, data: { requestId } })", () => {
    const usage = `${USAGE_HEADER}
export async function errors(slug: string) {
  const res = await client.GET("/organizations/by-slug/{slug}", { params: { path: { slug } } });
  if (res.error) {
    const requestId: string | undefined = res.error.data?.requestId;
    const issues: Array<{ path: string[]; message: string }> | undefined = res.error.issues;
  }
}
`;
    expect(typeCheck(api, usage)).toEqual([]);
  });
});

describe("the document's schemas under ajv", () => {
  it("has response schemas that all compile under ajv's strict mode", () => {
    const failures: string[] = [];
    let count = 0;
    for (const [template, item] of Object.entries<Json>(deref.paths ?? {})) {
      for (const [method, operation] of Object.entries<Json>(item)) {
        for (const [status, response] of Object.entries<Json>(operation?.responses ?? {})) {
          const schema = response?.content?.["application/json"]?.schema;
          if (!schema) continue;
          count++;
          try {
            validators.compile(schema);
          } catch (err) {
            failures.push(`${method.toUpperCase()} ${template} ${status}: ${(err as Error).message}`);
          }
        }
      }
    }
    expect(count).toBeGreaterThan(100);
    expect(failures).toEqual([]);
  });
});
