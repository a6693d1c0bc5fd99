// POST /audit/export: 10,000 entries leave as a stream (several chunks, complete, parsable),
// in CSV and JSON, with the organization scope and filters of the search.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADMIN_KEY, createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { expectSecured } from "../../support/security.js";
import { parseCsv } from "../../support/csv.js";

let h: Harness;
let bulk: Tenant;
let other: Tenant;
const COUNT = 10_000;

beforeAll(async () => {
  h = await createHarness();
  bulk = await h.createTenant("Export Bulk");
  other = await h.createTenant("Export Other");
  // Seven entries share each millisecond: paging must break ties by id without losing any.
  const base = Date.now() - 86_400_000;
  await h.services.prisma.auditEntry.createMany({
    data: Array.from({ length: COUNT }, (_, i) => ({
      organizationId: bulk.org.id,
      actorType: "user",
      actorId: bulk.user.id,
      userId: bulk.user.id,
      action: "bulk.test",
      entityType: "thing",
      entityId: `t-${i}`,
      outcome: i % 100 === 0 ? "failure" : "success",
      message: i % 1000 === 0 ? `needs "quoting", really\nyes` : null,
      createdAt: new Date(base + Math.floor(i / 7)),
    })),
  });
}, 120_000);
afterAll(() => h?.close());

/** Reads the body chunk by chunk, as the client receives it. */
async function download(body: unknown, key = bulk.key) {
  const res = await fetch(`${h.url}/api/v1/audit/export`, {
    method: "POST",
    headers: { "x-api-key": key, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const chunks: Uint8Array[] = [];
  const reader = res.body!.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
  }
  return { res, chunks: chunks.length, text: Buffer.concat(chunks).toString("utf8") };
}

describe("audit export", () => {
  it("streams 10,000 entries as JSON in several chunks, complete and newest first", async () => {
    const { res, chunks, text } = await download({ action: "bulk.test", format: "json" });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/json; charset=utf-8");
    expect(res.headers.get("content-disposition")).toMatch(/^attachment; filename="audit-log-\d{8}T\d{6}Z\.json"$/);
    expect(chunks).toBeGreaterThan(1);
    const items = JSON.parse(text) as { id: string; entityId: string; createdAt: string; organizationId: string }[];
    expect(items).toHaveLength(COUNT);
    expect(new Set(items.map((e) => e.id)).size).toBe(COUNT);
    expect(new Set(items.map((e) => e.entityId)).size).toBe(COUNT);
    for (let i = 1; i < items.length; i++) expect(items[i - 1].createdAt >= items[i].createdAt).toBe(true);
    expect(items.every((e) => e.organizationId === bulk.org.id)).toBe(true);
  });

  it("streams the same entries as CSV with a header row and quoted fields", async () => {
    const { res, chunks, text } = await download({ action: "bulk.test", format: "csv" });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/csv; charset=utf-8");
    expect(res.headers.get("content-disposition")).toMatch(/filename="audit-log-.*\.csv"/);
    expect(chunks).toBeGreaterThan(1);
    const rows = parseCsv(text);
    expect(rows[0]).toEqual(["id", "createdAt", "organizationId", "actorType", "actorId", "userId", "action", "entityType", "entityId", "outcome", "message", "sourceIp", "userAgent", "requestId", "changes"]);
    expect(rows).toHaveLength(COUNT + 1);
    expect(new Set(rows.slice(1).map((r) => r[0])).size).toBe(COUNT);
    expect(rows.find((r) => r[8] === "t-0")?.[10]).toBe('needs "quoting", really\nyes');
  });

  it("applies filters and maxRecords", async () => {
    const failures = await download({ action: "bulk.test", outcome: "failure", format: "json" });
    expect(JSON.parse(failures.text)).toHaveLength(100);
    const capped = await download({ action: "bulk.test", format: "json", maxRecords: 1234 });
    expect(JSON.parse(capped.text)).toHaveLength(1234);
  });

  it("exports only the caller's organization; a Super Admin may name one", async () => {
    const foreign = await download({ action: "bulk.test", format: "json" }, other.key);
    expect(JSON.parse(foreign.text)).toEqual([]);
    const admin = await download({ action: "bulk.test", organizationId: bulk.org.id, format: "json", maxRecords: 10 }, ADMIN_KEY);
    expect(JSON.parse(admin.text)).toHaveLength(10);
  });

  it("refuses bad input with 400 and a non-JSON body with 415, and records the export", async () => {
    const badFormat = await h.api("POST", "/api/v1/audit/export", { key: bulk.key, body: { format: "xml" } });
    expect(badFormat.status).toBe(400);
    expect(badFormat.body).toMatchObject({ code: "BAD_REQUEST", data: { httpStatus: 400 } });
    expect(badFormat.body.message).toContain("format");
    expect((await h.api("POST", "/api/v1/audit/export", { key: bulk.key, body: { maxRecords: 0 } })).status).toBe(400);
    expect((await h.api("POST", "/api/v1/audit/export", { key: bulk.key, raw: "{oops", headers: { "content-type": "application/json" } })).status).toBe(400);
    expect((await h.api("POST", "/api/v1/audit/export", { key: bulk.key, raw: "a=b", headers: { "content-type": "text/plain" } })).status).toBe(415);
    const recorded = await h.services.prisma.auditEntry.count({ where: { organizationId: bulk.org.id, action: "audit.export" } });
    expect(recorded).toBeGreaterThanOrEqual(4); // json, csv, failures, capped (the admin's own lands in its organization)
  });

  it("is secured and documented", async () => {
    await expectSecured(h, bulk, other, { method: "POST", path: "/api/v1/audit/export", body: { maxRecords: 1 }, permission: "audit:read" });
    const doc = await h.api("GET", "/api/v1/openapi.json", { key: null });
    const op = doc.body.paths["/audit/export"].post;
    expect(Object.keys(op.responses[200].content)).toEqual(["text/csv", "application/json"]);
    expect(op.requestBody.content["application/json"].schema.properties.format.enum).toEqual(["csv", "json"]);
  });
});
