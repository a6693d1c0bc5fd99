// Hostile input against every documented operation: random and malicious bodies, query
// strings and path values (wrong types, huge strings, deep nesting, unicode, prototype-
// pollution keys, SQL fragments). Every answer must be a 2xx or a 4xx with the error shape,
// never a 500, a hang or a leak, and a refused request must leave the data unchanged.
// Then a sweep of the strings PostgreSQL cannot store (NUL, unpaired surrogates) through
// every string field, object key, query parameter and path parameter of every operation:
// each is refused with a 400 naming it, before anything is stored or logged as an error.
import crypto from "node:crypto";
import fc from "fast-check";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createHarness, type Harness } from "../support/harness.js";

let h: Harness;
type Schema = {
  type?: string | string[]; properties?: Record<string, Schema>; required?: string[]; items?: Schema; enum?: unknown[]; $ref?: string;
  anyOf?: Schema[]; oneOf?: Schema[]; allOf?: Schema[]; format?: string; additionalProperties?: Schema | boolean;
};
type Operation = { method: string; path: string; hasBody: boolean; query: string[]; bodySchema?: Schema };
let operations: Operation[] = [];
/** every documented operation, the streaming ones and the organization's own deletion too (for the sweep, which all refuses) */
let everyOperation: Operation[] = [];
let components: Record<string, Schema> = {};

const STREAMING = /\/stream$|\/realtime$|\/progress$/;

beforeAll(async () => {
  h = await createHarness({ RATE_LIMIT_PER_SOURCE: "0", RATE_LIMIT_PER_CREDENTIAL: "0" }, { watchSecrets: false });
  const doc = (await h.api("GET", "/api/v1/openapi.json", { key: null })).body as {
    paths: Record<string, Record<string, { requestBody?: { content?: Record<string, { schema?: Schema }> }; parameters?: { in: string; name: string }[] }>>;
    components?: { schemas?: Record<string, Schema> };
  };
  components = doc.components?.schemas ?? {};
  // a table of the test's own, to show below that the counts follow writes as a recount would
  await h.services.database.opened.raw.exec(`CREATE TABLE "${PROBE_TABLE}" (id int)`);
  await countRows();
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (!["get", "post", "put", "patch", "delete"].includes(method)) continue;
      const operation = {
        method: method.toUpperCase(),
        path,
        hasBody: !!op.requestBody,
        query: (op.parameters ?? []).filter((p) => p.in === "query").map((p) => p.name),
        bodySchema: op.requestBody?.content?.["application/json"]?.schema,
      };
      everyOperation.push(operation);
      if (STREAMING.test(path)) continue;
      // Destructive operations on the caller's own organization would end the run early.
      if (method === "delete" && /^\/organizations\/\{id\}$/.test(path)) continue;
      operations.push(operation);
    }
  }
}, 120_000);
afterAll(() => h?.close());

const hostileString = fc.oneof(
  fc.constantFrom(
    "' OR 1=1 --", "'; DROP TABLE \"Organization\"; --", "../../etc/passwd", "%00", "\u0000", "__proto__",
    "constructor", "😀🚀", "\u202e\u0301", "null", "true", "-1", "1e309", "NaN", "<script>alert(1)</script>",
    "x".repeat(10_000), "00000000-0000-0000-0000-000000000000", "$(reboot)", "{{7*7}}", "a\u0000b", "\ud800x", "\udc00",
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

/**
 * Row counts of every table except the ones that legitimately grow on refusals (the audit log,
 * which records refused credentials and denials, unless `withAudit`: the request boundary
 * refuses before any of those), as changes since the counting began.
 *
 * Counting every table with count(*) before and after each request cost twice the request
 * itself (135 ms against 65 ms on PGlite, ~90 tables), and the property test asks ~3,700
 * times per phase. So the test database keeps the counts itself: a row trigger on every
 * table (a partitioned table's trigger reaches its partitions, present and future) adds or
 * takes one from the table's counter in the writing transaction, so a write that is rolled
 * back leaves its counter as it was, exactly as a recount would. Test instrumentation only:
 * the triggers are made here, on this file's own database.
 */
const COUNTS_TABLE = "zz_fuzz_row_counts";
const PROBE_TABLE = "zz_fuzz_probe";
const NOT_COUNTED = ["rate_limits", "_prisma_migrations", COUNTS_TABLE];

async function countRows(): Promise<void> {
  const raw = h.services.database.opened.raw;
  await raw.query(`CREATE TABLE "${COUNTS_TABLE}" (t text PRIMARY KEY, n bigint NOT NULL)`);
  await raw.query(`CREATE FUNCTION zz_fuzz_count() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO "${COUNTS_TABLE}" AS c (t, n) VALUES (TG_TABLE_NAME, CASE WHEN TG_OP = 'INSERT' THEN 1 ELSE -1 END)
        ON CONFLICT (t) DO UPDATE SET n = c.n + excluded.n;
      RETURN NULL;
    END $$`);
  // plain tables and partitioned parents; partitions inherit their parent's trigger
  const tables = await raw.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_class c
      WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p') AND NOT c.relispartition
        AND c.relname <> ALL($1::text[])`,
    [NOT_COUNTED],
  );
  for (const { name } of tables) {
    await raw.query(`CREATE TRIGGER zz_fuzz_count AFTER INSERT OR DELETE ON "${name}" FOR EACH ROW EXECUTE FUNCTION zz_fuzz_count()`);
  }
}

async function dataFingerprint(withAudit = false): Promise<string> {
  const rows = await h.services.database.opened.raw.query<{ t: string; n: string }>(
    `SELECT t, n::text AS n FROM "${COUNTS_TABLE}" WHERE n <> 0 ${withAudit ? "" : `AND t <> 'AuditEntry'`} ORDER BY t`,
  );
  return rows.map((r) => `${r.t}=${r.n}`).join(",");
}

/**
 * A path value percent-encoded; an unpaired surrogate becomes the three bytes a naive
 * (CESU-8) encoder writes for it ("%ED%A0%80"), which are not UTF-8.
 */
function encodeSegment(value: string): string {
  return value.split(/([\uD800-\uDFFF])/u).map((part) => {
    if (!/^[\uD800-\uDFFF]$/u.test(part)) return encodeURIComponent(part);
    const unit = part.charCodeAt(0);
    return [0xed, 0x80 | ((unit >> 6) & 0x3f), 0x80 | (unit & 0x3f)].map((b) => `%${b.toString(16).toUpperCase()}`).join("");
  }).join("");
}

async function send(op: Operation, pathValues: string[], query: Record<string, string>, body: unknown) {
  let i = 0;
  const path = op.path.replace(/\{[^}]+\}/g, () => encodeSegment(pathValues[i++ % pathValues.length] || "x"));
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

it("keeps each table's row count as a recount would: committed inserts and deletes count, rolled-back ones do not", async () => {
  const raw = h.services.database.opened.raw;
  const uncounted = await raw.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_class c
      WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p') AND c.relname <> ALL($1::text[])
        AND NOT EXISTS (SELECT 1 FROM pg_trigger g WHERE g.tgrelid = c.oid AND g.tgname = 'zz_fuzz_count')`,
    [NOT_COUNTED],
  );
  expect(uncounted.map((r) => r.name)).toEqual([]);
  const before = await dataFingerprint(true);
  await raw.exec(`BEGIN; INSERT INTO "${PROBE_TABLE}" VALUES (1), (2); ROLLBACK`);
  expect(await dataFingerprint(true)).toBe(before);
  await raw.exec(`INSERT INTO "${PROBE_TABLE}" VALUES (1), (2)`);
  expect(await dataFingerprint(true)).toContain(`${PROBE_TABLE}=2`);
  await raw.exec(`DELETE FROM "${PROBE_TABLE}"`);
  expect(await dataFingerprint(true)).toBe(before);
});

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
      // Eight inputs per operation and database, a different eight on each: CI's two phases
      // together send sixteen, the same ones at every run (a failure reproduces).
      { numRuns: 8, seed: process.env.DATABASE_URL ? 4242 : 42 },
    );
  }
  expect(failures, failures.slice(0, 20).join("\n")).toEqual([]);
}, 600_000);

// The strings PostgreSQL cannot store: a NUL, a lone high and a lone low surrogate.
const UNSTORABLE = ["a\u0000b", "\ud800x", "\udc00"];
/** Text fields where the service stores them as U+FFFD instead (docs/telemetry.md). */
const LOSSY = [{ operation: "POST /agent/logs", path: ["entries", "*", "message"] }];

type Slot = { path: (string | number)[]; kind: "value" | "key" };

/** Every place of a body schema where a string value goes, and every object that takes any key (records). */
function slotsOf(schema: Schema | undefined, path: (string | number)[] = [], depth = 0): Slot[] {
  if (!schema || depth > 6) return [];
  if (schema.$ref) return slotsOf(components[schema.$ref.split("/").pop()!], path, depth + 1);
  const variants = [...(schema.anyOf ?? []), ...(schema.oneOf ?? []), ...(schema.allOf ?? [])];
  if (variants.length) return dedupe(variants.flatMap((v) => slotsOf(v, path, depth + 1)));
  const types = Array.isArray(schema.type) ? schema.type : schema.type ? [schema.type] : [];
  const slots: Slot[] = [];
  if (types.includes("string") || types.length === 0) slots.push({ path, kind: "value" });
  if (types.includes("array")) slots.push(...slotsOf(schema.items, [...path, 0], depth + 1));
  if (types.includes("object")) {
    for (const [key, property] of Object.entries(schema.properties ?? {})) slots.push(...slotsOf(property, [...path, key], depth + 1));
    if (schema.additionalProperties !== undefined && schema.additionalProperties !== false) {
      slots.push({ path, kind: "key" });
      slots.push(...slotsOf(schema.additionalProperties === true ? {} : schema.additionalProperties, [...path, "k"], depth + 1));
    }
  }
  return slots;
}

function dedupe(slots: Slot[]): Slot[] {
  const seen = new Set<string>();
  return slots.filter((slot) => !seen.has(JSON.stringify(slot)) && !!seen.add(JSON.stringify(slot)));
}

/** A body holding `value` at `path` and nothing else (the boundary must refuse it before any schema). */
function bodyWith(path: (string | number)[], value: unknown): unknown {
  return path.reduceRight<unknown>((inner, key) => (typeof key === "number" ? [inner] : { [key]: inner }), value);
}

const countErrorLogs = () => h.logs.filter((line) => /"level":(50|60)/.test(line)).length;

it("refuses NUL characters and unpaired surrogates in every string field, key, query and path parameter with 400 naming it", async () => {
  const failures: string[] = [];
  const errorsBefore = countErrorLogs();
  let requests = 0;
  let serverErrors = 0;
  for (const op of everyOperation) {
    const cases: { label: string; path: string; query: string; body?: unknown; expected: string[] }[] = [];
    const params = [...op.path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);
    const fillPath = (bad?: { name: string; value: string }) =>
      op.path.replace(/\{([^}]+)\}/g, (_m, name: string) => (bad?.name === name ? encodeSegment(bad.value) : crypto.randomUUID()));
    for (const name of params) {
      for (const value of UNSTORABLE) cases.push({ label: `path {${name}} ${JSON.stringify(value)}`, path: fillPath({ name, value }), query: "", expected: [name] });
    }
    // Query strings decode invalid UTF-8 to U+FFFD (as every URL parser does): only a NUL can arrive there.
    for (const name of op.query) cases.push({ label: `query ${name}`, path: fillPath(), query: `?${name}=a%00b`, expected: [name] });
    cases.push({ label: "query key", path: fillPath(), query: "?a%00b=1", expected: ["a\u0000b"] });
    if (op.method !== "GET" && op.method !== "DELETE") {
      for (const slot of slotsOf(op.bodySchema)) {
        for (const value of UNSTORABLE) {
          const expected = slot.kind === "key" ? [...slot.path, value] : slot.path;
          const body = slot.kind === "key" ? bodyWith(slot.path, { [value]: "x" }) : bodyWith(slot.path, value);
          cases.push({ label: `body ${slot.kind} ${JSON.stringify(expected)}`, path: fillPath(), query: "", body, expected: expected.map(String) });
        }
      }
      for (const value of UNSTORABLE) cases.push({ label: `body key ${JSON.stringify(value)}`, path: fillPath(), query: "", body: { [value]: "x" }, expected: [value] });
    }
    const before = await dataFingerprint(true);
    for (const c of cases) {
      requests++;
      const label = `${op.method} ${op.path} ${c.label}`;
      const lossy = LOSSY.some((l) => l.operation === `${op.method} ${op.path}` && l.path.length === c.expected.length && l.path.every((p, i) => p === "*" || p === c.expected[i]));
      let res: { status: number; text: string };
      try {
        res = await sendRaw(op.method, `${c.path}${c.query}`, c.body);
      } catch (err) {
        failures.push(`${label}: no answer (${(err as Error).message})`);
        continue;
      }
      if (res.status >= 500) {
        serverErrors++;
        failures.push(`${label}: status ${res.status}: ${res.text.slice(0, 200)}`);
        continue;
      }
      const body = parse(res.text) as { code?: string; issues?: { path: string[] }[]; data?: { requestId?: unknown } } | undefined;
      const named = body?.issues?.[0]?.path;
      if (lossy) {
        // stored as U+FFFD, never refused for it (the admin key is no device token: 401)
        if (res.status === 400 && JSON.stringify(named) === JSON.stringify(c.expected)) failures.push(`${label}: a lossy text field was refused`);
        continue;
      }
      if (res.status !== 400 || body?.code !== "BAD_REQUEST" || typeof body.data?.requestId !== "string" || JSON.stringify(named) !== JSON.stringify(c.expected)) {
        failures.push(`${label}: expected 400 naming ${JSON.stringify(c.expected)}, got ${res.status}: ${res.text.slice(0, 200)}`);
      }
    }
    if ((await dataFingerprint(true)) !== before) failures.push(`${op.method} ${op.path}: refused, but data (or the audit log) changed`);
  }
  const errors = countErrorLogs() - errorsBefore;
  if (errors > 0) failures.push(`${errors} error lines logged`);
  console.info(`${requests} requests over ${everyOperation.length} operations: ${failures.length} failures, ${serverErrors} answered 5xx`);
  expect(requests).toBeGreaterThan(1000);
  expect(failures, `${failures.length} failures:\n${failures.slice(0, 30).join("\n")}`).toEqual([]);
}, 900_000);

function parse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

async function sendRaw(method: string, pathAndQuery: string, body: unknown) {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), 10_000);
  try {
    const res = await fetch(`${h.url}/api/v1${pathAndQuery}`, {
      method,
      // same-origin, as the console sends: the cross-site guard of the cookie sign-in answers before any input is read
      headers: { "x-api-key": h.adminKey, "sec-fetch-site": "same-origin", ...(body !== undefined ? { "content-type": "application/json" } : {}) },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: controller.signal,
    });
    return { status: res.status, text: await res.text() };
  } finally {
    clearTimeout(timer);
  }
}
