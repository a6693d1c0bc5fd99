// Hostile input against every documented operation: random and malicious bodies, query
// strings and path values (wrong types, huge strings, deep nesting, unicode, prototype-
// pollution keys, SQL fragments). Every answer must be a 2xx or a 4xx with the error shape,
// never a 500, a hang or a leak, and a refused request must leave the data unchanged.
import fc from "fast-check";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createHarness, type Harness } from "../support/harness.js";

let h: Harness;
type Schema = { type?: string | string[]; properties?: Record<string, Schema>; required?: string[]; items?: Schema; enum?: unknown[]; $ref?: string; anyOf?: Schema[]; oneOf?: Schema[]; allOf?: Schema[]; format?: string };
let operations: { method: string; path: string; hasBody: boolean; query: string[]; bodySchema?: Schema }[] = [];
let components: Record<string, Schema> = {};

const STREAMING = /\/stream$|\/realtime$|\/progress$/;

beforeAll(async () => {
  h = await createHarness({ RATE_LIMIT_PER_SOURCE: "0", RATE_LIMIT_PER_CREDENTIAL: "0" }, { watchSecrets: false });
  const doc = (await h.api("GET", "/api/v1/openapi.json", { key: null })).body as {
    paths: Record<string, Record<string, { requestBody?: { content?: Record<string, { schema?: Schema }> }; parameters?: { in: string; name: string }[] }>>;
    components?: { schemas?: Record<string, Schema> };
  };
  components = doc.components?.schemas ?? {};
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (!["get", "post", "put", "patch", "delete"].includes(method) || STREAMING.test(path)) continue;
      // Destructive operations on the caller's own organization would end the run early.
      if (method === "delete" && /^\/organizations\/\{id\}$/.test(path)) continue;
      operations.push({
        method: method.toUpperCase(),
        path,
        hasBody: !!op.requestBody,
        query: (op.parameters ?? []).filter((p) => p.in === "query").map((p) => p.name),
        bodySchema: op.requestBody?.content?.["application/json"]?.schema,
      });
    }
  }
}, 120_000);
afterAll(() => h?.close());

const hostileString = fc.oneof(
  fc.constantFrom(
    "' OR 1=1 --", "'; DROP TABLE \"Organization\"; --", "../../etc/passwd", "%00", "\u0000", "__proto__",
    "constructor", "😀🚀", "\u202e\u0301", "null", "true", "-1", "1e309", "NaN", "<script>alert(1)</script>",
    "x".repeat(10_000), "00000000-0000-0000-0000-000000000000", "$(reboot)", "{{7*7}}",
  ),
  fc.string({ maxLength: 40 }),
  fc.uuid(),
);

const hostileValue: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: "small" },
    hostileString,
    fc.integer(),
    fc.double(),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie("value"), { maxLength: 4 }),
    fc.dictionary(fc.oneof(hostileString, fc.constantFrom("__proto__", "constructor", "prototype")), tie("value"), { maxKeys: 4 }),
  ),
})).value;

/**
 * A body of the operation's own shape with hostile leaves: past the structural validation,
 * so that the handlers themselves meet the strange values.
 */
function shaped(schema: Schema | undefined, depth = 0): fc.Arbitrary<unknown> {
  if (!schema || depth > 5) return hostileValue;
  if (schema.$ref) return shaped(components[schema.$ref.split("/").pop()!], depth + 1);
  const variants = schema.anyOf ?? schema.oneOf;
  if (variants?.length) return fc.oneof(...variants.map((v) => shaped(v, depth + 1)));
  if (schema.allOf?.length) return shaped(schema.allOf[0], depth + 1);
  if (schema.enum?.length) return fc.oneof(fc.constantFrom(...schema.enum), hostileString);
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== "null") : schema.type;
  switch (type) {
    case "object": {
      const props = schema.properties ?? {};
      const required = new Set(schema.required ?? []);
      const entries = Object.entries(props).map(([k, v]) => [k, required.has(k) ? shaped(v, depth + 1) : fc.option(shaped(v, depth + 1), { nil: undefined })] as const);
      return fc.record(Object.fromEntries(entries) as Record<string, fc.Arbitrary<unknown>>);
    }
    case "array":
      return fc.array(shaped(schema.items, depth + 1), { maxLength: 3 });
    case "integer":
    case "number":
      return fc.oneof(fc.integer({ min: -1_000_000, max: 1_000_000 }), fc.constantFrom(0, 1, -1, 2 ** 53, 1e308), fc.double());
    case "boolean":
      return fc.oneof(fc.boolean(), hostileString);
    case "string":
      return schema.format === "date-time"
        ? fc.oneof(fc.date({ noInvalidDate: true }).map((d) => d.toISOString()), hostileString)
        : schema.format === "email"
          ? fc.oneof(fc.emailAddress(), hostileString)
          : schema.format === "uuid" ? fc.oneof(fc.uuid(), hostileString) : hostileString;
    default:
      return hostileValue;
  }
}

function deeplyNested(depth: number): unknown {
  let v: unknown = "leaf";
  for (let i = 0; i < depth; i++) v = { a: v };
  return v;
}

/** Row counts of every table except the ones that legitimately grow on refusals. */
async function dataFingerprint(): Promise<string> {
  const tables = await h.services.database.opened.raw.query<{ tablename: string }>(
    `SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND tablename NOT IN ('AuditEntry', 'rate_limits', '_prisma_migrations') ORDER BY tablename`,
  );
  const sql = tables.map((t) => `SELECT '${t.tablename}' AS t, count(*)::int AS n FROM "${t.tablename}"`).join(" UNION ALL ");
  const rows = await h.services.database.opened.raw.query<{ t: string; n: number }>(sql);
  return rows.map((r) => `${r.t}=${r.n}`).join(",");
}

async function send(op: (typeof operations)[number], pathValues: string[], query: Record<string, string>, body: unknown) {
  let i = 0;
  const path = op.path.replace(/\{[^}]+\}/g, () => encodeURIComponent(pathValues[i++ % pathValues.length] || "x"));
  const qs = new URLSearchParams(query).toString();
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), 10_000);
  try {
    const res = await fetch(`${h.url}/api/v1${path}${qs ? `?${qs}` : ""}`, {
      method: op.method,
      headers: { "x-api-key": h.adminKey, ...(op.hasBody || op.method !== "GET" ? { "content-type": "application/json" } : {}) },
      body: op.method === "GET" || op.method === "DELETE" ? undefined : JSON.stringify(body),
      signal: controller.signal,
    });
    return { status: res.status, text: await res.text(), label: `${op.method} ${path}` };
  } finally {
    clearTimeout(timer);
  }
}

it("answers hostile input on every operation with 2xx/4xx and the error shape, never 500", async () => {
  expect(operations.length).toBeGreaterThan(0);
  const failures: string[] = [];
  for (const op of operations) {
    await fc.assert(
      fc.asyncProperty(
        fc.array(hostileString, { minLength: 1, maxLength: 3 }),
        fc.dictionary(fc.constantFrom(...(op.query.length ? op.query : ["q"]), "__proto__", "limit"), hostileString, { maxKeys: 3 }),
        fc.oneof({ arbitrary: shaped(op.bodySchema), weight: 4 }, { arbitrary: hostileValue, weight: 1 }, { arbitrary: fc.constant(deeplyNested(200)), weight: 1 }),
        async (pathValues, query, body) => {
          const before = await dataFingerprint();
          const res = await send(op, pathValues, query, body);
          const problem =
            res.status >= 500 && res.status !== 503 ? `status ${res.status}` :
            /"stack"|\bat [\w.<>]+ \(|node_modules|prisma\.|SELECT |INSERT INTO/i.test(res.text) ? "leaks internals" :
            res.status >= 400 && !/"code"\s*:/.test(res.text) ? "error without the error shape" :
            null;
          if (problem) failures.push(`${res.label}: ${problem}: ${res.text.slice(0, 300)}`);
          if (res.status >= 400 && (await dataFingerprint()) !== before) failures.push(`${res.label}: refused (${res.status}) but data changed`);
        },
      ),
      { numRuns: 12, seed: 42 },
    );
  }
  expect(failures, failures.slice(0, 20).join("\n")).toEqual([]);
}, 600_000);
