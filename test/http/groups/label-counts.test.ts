// Spec op 14, label keys and label values answer from the DeviceLabelCount ledger (triggers
// on Device, compaction job).
// After every kind of device change the service makes (bulk insert, enrollment, heartbeats,
// label edits one by one and in bulk, status changes, deletions one by one and in bulk) the
// answer must equal the same counts taken from the devices themselves.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { createEnrollmentToken, enroll, ensureCa, heartbeat, insertDevices } from "../agent/fleet-support.js";
import { compactLabelCounts } from "../../../src/modules/groups/label-counts.js";

const KEYS = ["site", "tier", "maintenance", "ring", "hw/model", "never-used"];
const STATUSES = ["online", "offline", "pending", "error", "provisioned"];

let h: Harness;
let acme: Tenant;
let globex: Tenant;

beforeAll(async () => {
  h = await createHarness();
  acme = await h.createTenant("Ledger Acme");
  globex = await h.createTenant("Ledger Globex");
});
afterAll(() => h?.close());

/** Op 14 as computed from the devices themselves. */
async function fromDevices(organizationId: string, key: string) {
  const rows = await h.services.database.opened.raw.query<{ value: string; status: string; count: number }>(
    `SELECT "labels" ->> $2 AS "value", "status", count(*)::int AS "count" FROM "Device"
      WHERE "organizationId" = $1::uuid AND "labels" ? $2 GROUP BY 1, 2`,
    [organizationId, key],
  );
  const groups = new Map<string, { value: string; count: number; byStatus: Record<string, number> }>();
  for (const r of rows) {
    const g = groups.get(r.value) ?? { value: r.value, count: 0, byStatus: Object.fromEntries(STATUSES.map((s) => [s, 0])) };
    g.count += r.count;
    g.byStatus[r.status] += r.count;
    groups.set(r.value, g);
  }
  const sorted = [...groups.values()].sort((a, b) => b.count - a.count || a.value.localeCompare(b.value));
  return { labelKey: key, groups: sorted, total: sorted.reduce((n, g) => n + g.count, 0) };
}

/** Label keys (with device and value counts) and each key's values, from the devices themselves. */
async function keysFromDevices(organizationId: string) {
  const raw = h.services.database.opened.raw;
  const keys = await raw.query<{ key: string; deviceCount: number; valueCount: number }>(
    `SELECT k AS "key", count(*)::int AS "deviceCount", count(DISTINCT d."labels" ->> k)::int AS "valueCount"
       FROM "Device" d CROSS JOIN LATERAL jsonb_object_keys(d."labels") k WHERE d."organizationId" = $1::uuid GROUP BY k ORDER BY k`,
    [organizationId],
  );
  const values = async (key: string) =>
    raw.query<{ value: string; count: number }>(
      `SELECT d."labels" ->> $2 AS "value", count(*)::int AS "count" FROM "Device" d
        WHERE d."organizationId" = $1::uuid AND d."labels" ? $2 GROUP BY 1 ORDER BY 2 DESC, 1 ASC`,
      [organizationId, key],
    );
  return { keys, values };
}

async function expectLedgerMatches(tenant: Tenant, step: string) {
  for (const key of KEYS) {
    const res = await h.api("GET", `/api/v1/groups/by-label/${encodeURIComponent(key)}`, { key: tenant.key });
    expect(res.status, `${step}: ${key}: ${res.text}`).toBe(200);
    expect(res.body, `${step}: ${key}`).toEqual(await fromDevices(tenant.org.id, key));
  }
  const oracle = await keysFromDevices(tenant.org.id);
  const keys = await h.api("GET", "/api/v1/groups/label-keys?limit=200", { key: tenant.key });
  expect(keys.body, `${step}: label keys`).toMatchObject({ items: oracle.keys, total: oracle.keys.length });
  expect((await h.api("GET", "/api/v1/groups/stats", { key: tenant.key })).body.labelKeys, `${step}: stats`).toBe(oracle.keys.length);
  for (const key of KEYS) {
    const values = await h.api("GET", `/api/v1/groups/label-keys/${encodeURIComponent(key)}/values?limit=200`, { key: tenant.key });
    const expected = await oracle.values(key);
    expect(values.body, `${step}: values of ${key}`).toMatchObject({
      key,
      items: expected,
      total: expected.length,
      deviceCount: expected.reduce((n, v) => n + v.count, 0),
    });
  }
}

const ledgerRows = async () => (await h.services.database.opened.raw.query<{ n: number }>(`SELECT count(*)::int AS n FROM "DeviceLabelCount"`))[0].n;

describe("op 14 from the label count ledger", () => {
  let inserted: string[];

  it("counts devices inserted in bulk, per tenant", async () => {
    inserted = await insertDevices(
      h,
      acme.org.id,
      Array.from({ length: 150 }, (_, i) => ({
        status: STATUSES[i % STATUSES.length],
        labels: { site: `site-${i % 7}`, tier: i % 3 === 0 ? "core" : "edge", ...(i % 10 === 0 ? { maintenance: "yes" } : {}), ...(i % 25 === 0 ? { "hw/model": "pi 5" } : {}) },
      })),
    );
    await insertDevices(h, globex.org.id, Array.from({ length: 20 }, () => ({ status: "online", labels: { site: "site-0" } })));
    await expectLedgerMatches(acme, "after insert");
    await expectLedgerMatches(globex, "after insert");
    const globexSite = await h.api("GET", "/api/v1/groups/by-label/site", { key: globex.key });
    expect(globexSite.body).toMatchObject({ total: 20, groups: [{ value: "site-0", count: 20, byStatus: { online: 20 } }] });
  });

  it("follows label edits one by one and in bulk", async () => {
    const patch = await h.api("PATCH", `/api/v1/devices/${inserted[0]}`, { key: acme.key, body: { labels: { site: "moved", ring: "canary" } } });
    expect(patch.status, patch.text).toBe(200);
    expect((await h.api("POST", `/api/v1/devices/${inserted[1]}/labels`, { key: acme.key, body: { key: "ring", value: "beta" } })).status).toBe(200);
    expect((await h.api("DELETE", `/api/v1/devices/${inserted[2]}/labels/site`, { key: acme.key })).status).toBe(200);
    const bulk = await h.api("POST", "/api/v1/groups/labels/bulk", { key: acme.key, body: { labelSelector: { tier: "core" }, set: { ring: "stable" }, remove: ["maintenance"] } });
    expect(bulk.status, bulk.text).toBe(200);
    await expectLedgerMatches(acme, "after label edits");
  });

  it("follows status changes, and a heartbeat that changes nothing adds nothing", async () => {
    await h.services.database.opened.raw.query(`UPDATE "Device" SET "status" = 'offline' WHERE "id" = ANY($1::uuid[])`, [inserted.slice(10, 60)]);
    await expectLedgerMatches(acme, "after status changes");

    await ensureCa(h, acme.key);
    const { token } = await createEnrollmentToken(h, acme.key, { labels: { site: "site-1", tier: "edge" } });
    const device = await enroll(h, token);
    expect((await heartbeat(h, device)).status).toBe(200);
    await expectLedgerMatches(acme, "after enrollment and a first heartbeat");
    const before = await ledgerRows();
    expect((await heartbeat(h, device)).status).toBe(200);
    expect(await ledgerRows()).toBe(before);
  });

  it("follows deletions one by one and in bulk", async () => {
    expect((await h.api("DELETE", `/api/v1/devices/${inserted[3]}`, { key: acme.key })).status).toBe(200);
    const bulk = await h.api("POST", "/api/v1/groups/devices/bulk-delete", { key: acme.key, body: { labelSelector: { site: "site-5" } } });
    expect(bulk.status, bulk.text).toBe(200);
    expect(bulk.body.deleted).toBeGreaterThan(0);
    await expectLedgerMatches(acme, "after deletions");
  });

  it("compaction folds the deltas without changing an answer, and drops organizations that are gone", async () => {
    const before = await ledgerRows();
    const first = await compactLabelCounts(h.services.database.opened.raw);
    expect(first.deleted).toBeGreaterThan(first.inserted);
    const after = await ledgerRows();
    expect(after).toBe(before - first.deleted + first.inserted);
    // one row per (organization, key, value, status) still present
    const groups = await h.services.database.opened.raw.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM (SELECT DISTINCT d."organizationId", l.key, l.value, d."status" FROM "Device" d CROSS JOIN LATERAL jsonb_each_text(d."labels") l) x`,
    );
    expect(after).toBe(groups[0].n);
    // a folded ledger is left alone
    expect(await compactLabelCounts(h.services.database.opened.raw)).toEqual({ deleted: 0, inserted: 0 });
    await expectLedgerMatches(acme, "after compaction");
    await expectLedgerMatches(globex, "after compaction");

    await h.services.prisma.organization.delete({ where: { id: globex.org.id } });
    await compactLabelCounts(h.services.database.opened.raw);
    const left = await h.services.database.opened.raw.query<{ n: number }>(`SELECT count(*)::int AS n FROM "DeviceLabelCount" WHERE "organizationId" = $1::uuid`, [globex.org.id]);
    expect(left[0].n).toBe(0);
    await expectLedgerMatches(acme, "after another organization was deleted");
  });
});
