// /api/v1/groups over a fleet of a few hundred devices with mixed labels and statuses:
// every answer is compared with counts computed here from the same fleet.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { expectSecured } from "../../support/security.js";
import { createEnrollmentToken, enroll, ensureCa, insertDevices, type DeviceSpec } from "../agent/fleet-support.js";

const STATUSES = ["online", "offline", "pending", "error", "provisioned"] as const;
const SITES = ["berlin", "paris", "rome", "oslo"];
const TIERS = ["core", "edge"];
// As agents report them; op 12 counts them as manifests name them (undefined: not reported).
const REPORTED_ARCHS = ["x86_64", "aarch64", "armv7l", "riscv64", undefined, "armv7"] as const;
const MANIFEST_ARCH: Record<string, string> = { x86_64: "amd64", aarch64: "arm64", armv7l: "arm", armv7: "arm", riscv64: "riscv64" };

let h: Harness;
let acme: Tenant;
let globex: Tenant;
let fleetIds: string[];
let fleet: (DeviceSpec & { labels: Record<string, string>; status: string; arch?: string })[];

// A deterministic pseudo-random fleet: 360 devices; some carry no site, some carry extra keys.
function buildFleet() {
  let seed = 42;
  const rnd = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  return Array.from({ length: 360 }, (_, i) => {
    const labels: Record<string, string> = {};
    if (rnd() < 0.9) labels.site = SITES[Math.floor(rnd() * SITES.length)];
    labels.tier = TIERS[Math.floor(rnd() * TIERS.length)];
    if (rnd() < 0.1) labels.maintenance = "yes";
    if (i % 37 === 0) labels["hw/model"] = "pi 5";
    return { name: `fleet-${i}`, status: STATUSES[Math.floor(rnd() * STATUSES.length)], labels, arch: REPORTED_ARCHS[i % REPORTED_ARCHS.length] };
  });
}

function expected(filter: (labels: Record<string, string>) => boolean) {
  const byStatus = { online: 0, offline: 0, pending: 0, error: 0, provisioned: 0 };
  let total = 0;
  for (const d of fleet) {
    if (!filter(d.labels)) continue;
    total++;
    byStatus[d.status as keyof typeof byStatus]++;
  }
  return { total, byStatus };
}

/** Op 12's answer: the status breakdown plus the architecture breakdown. */
function expectedQuery(filter: (labels: Record<string, string>) => boolean) {
  const byArchitecture: Record<string, number> = {};
  for (const d of fleet) {
    if (!filter(d.labels)) continue;
    const arch = d.arch ? MANIFEST_ARCH[d.arch] : "unknown";
    byArchitecture[arch] = (byArchitecture[arch] ?? 0) + 1;
  }
  return { ...expected(filter), byArchitecture };
}

const matches = (selector: Record<string, string>) => (labels: Record<string, string>) =>
  Object.entries(selector).every(([k, v]) => labels[k] === v);

beforeAll(async () => {
  h = await createHarness();
  acme = await h.createTenant("Acme Groups");
  globex = await h.createTenant("Globex Groups");
  fleet = buildFleet();
  fleetIds = await insertDevices(h, acme.org.id, fleet);
  // Another tenant's devices with the same labels must never be counted.
  await insertDevices(h, globex.org.id, fleet.slice(0, 50));
});
afterAll(() => h?.close());

describe("spec op 12: POST /groups/query", () => {
  it("counts devices matching every pair of the selector, by status, and echoes the selector", async () => {
    const selectors: Record<string, string>[] = [{}, { site: "berlin" }, { site: "berlin", tier: "edge" }, { tier: "core", maintenance: "yes" }, { "hw/model": "pi 5" }, { site: "atlantis" }, { nokey: "x" }];
    for (const labelSelector of selectors) {
      const res = await h.api("POST", "/api/v1/groups/query", { key: acme.key, body: { labelSelector } });
      expect(res.status, JSON.stringify(labelSelector)).toBe(200);
      expect(res.body, JSON.stringify(labelSelector)).toEqual({ ...expectedQuery(matches(labelSelector)), labelSelector });
    }
    const sum = expected(() => true);
    expect(sum.total).toBe(360);
  });

  it("always answers every status key, even for an empty result", async () => {
    const res = await h.api("POST", "/api/v1/groups/query", { key: acme.key, body: { labelSelector: { site: "nowhere" } } });
    expect(res.body).toEqual({ total: 0, byStatus: { online: 0, offline: 0, pending: 0, error: 0, provisioned: 0 }, byArchitecture: {}, labelSelector: { site: "nowhere" } });
  });

  it("refuses a body that is not a selector", async () => {
    for (const body of [{}, { labelSelector: "site=berlin" }, { labelSelector: { site: 1 } }, { labelSelector: [] }]) {
      expect((await h.api("POST", "/api/v1/groups/query", { key: acme.key, body })).status, JSON.stringify(body)).toBe(400);
    }
  });
});

describe("spec op 14: GET /groups/by-label/{key}", () => {
  it("groups by every value of the key with counts and status breakdowns; total across groups", async () => {
    for (const key of ["site", "tier", "maintenance", "hw/model"]) {
      const res = await h.api("GET", `/api/v1/groups/by-label/${encodeURIComponent(key)}`, { key: acme.key });
      expect(res.status, key).toBe(200);
      const values = [...new Set(fleet.filter((d) => key in d.labels).map((d) => d.labels[key]))];
      const groups = values
        .map((value) => ({ value, ...(({ total, byStatus }) => ({ count: total, byStatus }))(expected((l) => l[key] === value)) }))
        .sort((a, b) => b.count - a.count || a.value.localeCompare(b.value));
      expect(res.body, key).toEqual({ labelKey: key, groups, total: expected((l) => key in l).total });
    }
  });

  it("answers empty groups and total 0 for an unknown key", async () => {
    const res = await h.api("GET", "/api/v1/groups/by-label/unknown-key", { key: acme.key });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ labelKey: "unknown-key", groups: [], total: 0 });
    const odd = await h.api("GET", `/api/v1/groups/by-label/${encodeURIComponent("key with spaces")}`, { key: acme.key });
    expect(odd.body).toEqual({ labelKey: "key with spaces", groups: [], total: 0 });
  });
});

describe("other group statistics", () => {
  it("GET /groups/query takes the selector from the query parameters", async () => {
    const res = await h.api("GET", "/api/v1/groups/query?site=paris&tier=core", { key: acme.key });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ...expectedQuery(matches({ site: "paris", tier: "core" })), labelSelector: { site: "paris", tier: "core" } });
    const all = await h.api("GET", "/api/v1/groups/query", { key: acme.key });
    expect(all.body.total).toBe(360);
    expect((await h.api("GET", "/api/v1/groups/query?site=a&site=b", { key: acme.key })).status).toBe(400);
  });

  it("GET /groups/stats: totals, statuses, unlabeled devices, label keys", async () => {
    const res = await h.api("GET", "/api/v1/groups/stats", { key: acme.key });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ...expected(() => true), unlabeled: 0, labelKeys: 4 });
  });

  it("GET /groups/label-keys and /groups/label-keys/{key}/values", async () => {
    const keys = await h.api("GET", "/api/v1/groups/label-keys", { key: acme.key });
    expect(keys.status).toBe(200);
    const expectedKeys = ["hw/model", "maintenance", "site", "tier"].map((key) => ({
      key,
      deviceCount: fleet.filter((d) => key in d.labels).length,
      valueCount: new Set(fleet.filter((d) => key in d.labels).map((d) => d.labels[key])).size,
    }));
    expect(keys.body).toEqual({ items: expectedKeys, total: 4, hasMore: false });
    const paged = await h.api("GET", "/api/v1/groups/label-keys?limit=1&offset=3", { key: acme.key });
    expect(paged.body).toEqual({ items: [expectedKeys[3]], total: 4, hasMore: false });
    expect((await h.api("GET", "/api/v1/groups/label-keys?offset=10", { key: acme.key })).body).toEqual({ items: [], total: 4, hasMore: false });

    const values = await h.api("GET", "/api/v1/groups/label-keys/site/values", { key: acme.key });
    const counts = SITES.map((value) => ({ value, count: fleet.filter((d) => d.labels.site === value).length }))
      .sort((a, b) => b.count - a.count || a.value.localeCompare(b.value));
    expect(values.body).toEqual({ key: "site", items: counts, total: 4, hasMore: false, deviceCount: fleet.filter((d) => "site" in d.labels).length });
    const none = await h.api("GET", "/api/v1/groups/label-keys/nothing/values", { key: acme.key });
    expect(none.body).toEqual({ key: "nothing", items: [], total: 0, hasMore: false, deviceCount: 0 });
  });
});

describe("POST /groups/eligibility: the devices a deployment profile would run on", () => {
  /** Counted here from the fleet: a profile runs on the devices whose architecture (as manifests name it) it lists. */
  function expectedFit(picked: typeof fleet, architectures?: string[]) {
    const byArchitecture: Record<string, number> = {};
    const skippedByArchitecture: Record<string, number> = {};
    for (const d of picked) {
      const arch = d.arch ? MANIFEST_ARCH[d.arch] : "unknown";
      byArchitecture[arch] = (byArchitecture[arch] ?? 0) + 1;
      if (architectures && !architectures.includes(arch)) skippedByArchitecture[arch] = (skippedByArchitecture[arch] ?? 0) + 1;
    }
    const skipped = Object.values(skippedByArchitecture).reduce((a, b) => a + b, 0);
    // of the eligible devices, those offline now (a staged rollout draws its canary from the others)
    const offline = picked.filter((d) => d.status === "offline" && !skippedByArchitecture[d.arch ? MANIFEST_ARCH[d.arch] : "unknown"]).length;
    return { matched: picked.length, eligible: picked.length - skipped, skipped, offline, byArchitecture, skippedByArchitecture, skippedWithoutRauc: 0 };
  }

  it("counts matched, eligible and skipped devices by selector, armv7 and armv7l counting as arm", async () => {
    for (const labelSelector of [{}, { site: "berlin" }, { site: "rome", tier: "edge" }, { site: "atlantis" }] as Record<string, string>[]) {
      for (const architectures of [undefined, ["arm"], ["arm64", "amd64"], []]) {
        const res = await h.api("POST", "/api/v1/groups/eligibility", { key: acme.key, body: { labelSelector, architectures } });
        const what = JSON.stringify({ labelSelector, architectures });
        expect(res.status, `${what} ${res.text}`).toBe(200);
        expect(res.body, what).toEqual(expectedFit(fleet.filter((d) => matches(labelSelector)(d.labels)), architectures));
      }
    }
    // Both spellings of 32-bit ARM are eligible for an arm profile; a device that reported nothing is not.
    const arm = await h.api("POST", "/api/v1/groups/eligibility", { key: acme.key, body: { labelSelector: {}, architectures: ["arm"] } });
    expect(arm.body.eligible).toBe(fleet.filter((d) => d.arch === "armv7" || d.arch === "armv7l").length);
    expect(fleet.some((d) => d.arch === "armv7") && fleet.some((d) => d.arch === "armv7l")).toBe(true);
    expect(arm.body.skippedByArchitecture.unknown).toBe(fleet.filter((d) => !d.arch).length);
  });

  it("counts picked devices, never another tenant's", async () => {
    const picked = [0, 1, 2, 3, 4, 5, 11];
    const res = await h.api("POST", "/api/v1/groups/eligibility", { key: acme.key, body: { deviceIds: picked.map((i) => fleetIds[i]), architectures: ["arm64"] } });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual(expectedFit(picked.map((i) => fleet[i]), ["arm64"]));
    const foreign = await h.api("POST", "/api/v1/groups/eligibility", { key: globex.key, body: { deviceIds: picked.map((i) => fleetIds[i]) } });
    expect(foreign.body).toEqual({ matched: 0, eligible: 0, skipped: 0, offline: 0, byArchitecture: {}, skippedByArchitecture: {}, skippedWithoutRauc: 0 });
  });

  it("with a system image, counts the devices without RAUC apart, by the rule a deployment skips them", async () => {
    // two arm64 devices report RAUC; the others do not
    const arm64 = fleet.map((d, i) => ({ d, id: fleetIds[i] })).filter(({ d }) => d.arch === "aarch64" || d.arch === "arm64");
    expect(arm64.length).toBeGreaterThan(2);
    const withRauc = arm64.slice(0, 2).map(({ id }) => id);
    await h.services.prisma.device.updateMany({ where: { id: { in: withRauc } }, data: { facts: { rauc: true } } });
    try {
      const res = await h.api("POST", "/api/v1/groups/eligibility", { key: acme.key, body: { labelSelector: {}, architectures: ["arm64"], systemImage: true } });
      expect(res.status, res.text).toBe(200);
      const plain = expectedFit(fleet, ["arm64"]);
      expect(res.body).toEqual({ ...plain, eligible: 2, skipped: fleet.length - 2, skippedWithoutRauc: arm64.length - 2,
        offline: fleet.filter((d, i) => withRauc.includes(fleetIds[i]) && d.status === "offline").length });
      // without the flag, RAUC does not matter
      const without = await h.api("POST", "/api/v1/groups/eligibility", { key: acme.key, body: { labelSelector: {}, architectures: ["arm64"] } });
      expect(without.body).toEqual(plain);
      // a string is not a boolean (the REST facade does not coerce it)
      const bad = await h.api("POST", "/api/v1/groups/eligibility", { key: acme.key, body: { labelSelector: {}, systemImage: "yes" } });
      expect(bad.status).toBe(400);
      expect(bad.body.issues).toEqual([expect.objectContaining({ path: ["systemImage"] })]);
    } finally {
      await h.services.prisma.device.updateMany({ where: { id: { in: withRauc } }, data: { facts: {} } });
    }
  });

  it("refuses a request without exactly one target or with an architecture manifests do not name, naming the field", async () => {
    const bad: Array<[Record<string, unknown>, string]> = [
      [{}, "labelSelector"],
      [{ labelSelector: {}, deviceIds: [fleetIds[0]] }, "labelSelector"],
      [{ labelSelector: {}, architectures: ["armv7"] }, "architectures"],
      [{ deviceIds: ["not-a-uuid"] }, "deviceIds"],
    ];
    for (const [body, field] of bad) {
      const res = await h.api("POST", "/api/v1/groups/eligibility", { key: acme.key, body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.message, JSON.stringify(body)).toContain(field);
    }
  });
});

describe("bulk operations", () => {
  it("updates labels of every device matched by a selector in one statement, with activity entries", async () => {
    const target = fleet.filter((d) => d.labels.site === "oslo" && d.labels.tier === "edge").length;
    const res = await h.api("POST", "/api/v1/groups/labels/bulk", {
      key: acme.key,
      body: { labelSelector: { site: "oslo", tier: "edge" }, set: { ring: "canary" }, remove: ["maintenance"] },
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ matched: target, updated: target, skipped: 0 });
    const after = await h.api("POST", "/api/v1/groups/query", { key: acme.key, body: { labelSelector: { ring: "canary" } } });
    expect(after.body.total).toBe(target);
    expect((await h.api("POST", "/api/v1/groups/query", { key: acme.key, body: { labelSelector: { ring: "canary", maintenance: "yes" } } })).body.total).toBe(0);
    const events = await h.services.prisma.deviceEvent.count({ where: { organizationId: acme.org.id, type: "labels_changed" } });
    expect(events).toBe(target);
    // Again: everything matches, nothing changes.
    const again = await h.api("POST", "/api/v1/groups/labels/bulk", { key: acme.key, body: { labelSelector: { site: "oslo", tier: "edge" }, set: { ring: "canary" } } });
    expect(again.body).toEqual({ matched: target, updated: 0, skipped: 0 });
    // Another tenant's devices were not touched.
    expect((await h.api("POST", "/api/v1/groups/query", { key: globex.key, body: { labelSelector: { ring: "canary" } } })).body.total).toBe(0);
  });

  it("updates labels by device ids, and skips devices that would exceed the label limit", async () => {
    const [a, b] = await insertDevices(h, acme.org.id, [
      { name: "bulk-a", labels: { keep: "1" } },
      { name: "bulk-b", labels: Object.fromEntries(Array.from({ length: 64 }, (_, i) => [`k${i}`, "v"])) },
    ]);
    const res = await h.api("POST", "/api/v1/groups/labels/bulk", { key: acme.key, body: { deviceIds: [a, b], set: { extra: "yes" } } });
    expect(res.body).toEqual({ matched: 2, updated: 1, skipped: 1 });
    expect((await h.services.prisma.device.findUniqueOrThrow({ where: { id: a } })).labels).toEqual({ keep: "1", extra: "yes" });
    // Ids of another tenant match nothing.
    const foreign = await h.api("POST", "/api/v1/groups/labels/bulk", { key: globex.key, body: { deviceIds: [a], set: { x: "y" } } });
    expect(foreign.body).toEqual({ matched: 0, updated: 0, skipped: 0 });
    await h.services.prisma.device.deleteMany({ where: { id: { in: [a, b] } } });
  });

  it("refuses ambiguous or empty bulk requests", async () => {
    const bad = [
      { set: { a: "b" } },
      { labelSelector: {}, set: { a: "b" } },
      { labelSelector: { site: "berlin" }, deviceIds: ["00000000-0000-4000-8000-000000000000"], set: { a: "b" } },
      { labelSelector: { site: "berlin" } },
      { labelSelector: { site: "berlin" }, set: { a: "b" }, remove: ["a"] },
      { labelSelector: { site: "berlin" }, set: { "bad key": "x" } },
    ];
    for (const body of bad) {
      expect((await h.api("POST", "/api/v1/groups/labels/bulk", { key: acme.key, body })).status, JSON.stringify(body)).toBe(400);
    }
    expect((await h.api("POST", "/api/v1/groups/devices/bulk-delete", { key: acme.key, body: {} })).status).toBe(400);
    expect((await h.api("POST", "/api/v1/groups/devices/bulk-delete", { key: acme.key, body: { labelSelector: {} } })).status).toBe(400);
  });

  it("deletes every matched device, revoking the certificates of enrolled ones", async () => {
    await ensureCa(h, acme.key);
    const t = await createEnrollmentToken(h, acme.key, { labels: { batch: "retired" } });
    const enrolled = [await enroll(h, t.token), await enroll(h, t.token)];
    await insertDevices(h, acme.org.id, [{ name: "retired-1", labels: { batch: "retired" } }]);
    const before = (await h.api("GET", "/api/v1/groups/stats", { key: acme.key })).body.total;
    const res = await h.api("POST", "/api/v1/groups/devices/bulk-delete", { key: acme.key, body: { labelSelector: { batch: "retired" } } });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ deleted: 3, revokedCertificates: 2 });
    expect((await h.api("GET", "/api/v1/groups/stats", { key: acme.key })).body.total).toBe(before - 3);
    for (const d of enrolled) {
      const cert = await h.services.prisma.deviceCertificate.findUniqueOrThrow({ where: { id: d.certificateId } });
      expect(cert.revoked).toBe(true);
      const hb = await h.api("POST", "/api/v1/agent/heartbeat", { key: null, token: await d.token(), body: {} });
      expect(hb.status).toBe(401);
    }
    const byIds = await insertDevices(h, acme.org.id, [{ name: "x1" }, { name: "x2" }]);
    const res2 = await h.api("POST", "/api/v1/groups/devices/bulk-delete", { key: acme.key, body: { deviceIds: byIds } });
    expect(res2.body).toEqual({ deleted: 2, revokedCertificates: 0 });
    // Another tenant's ids delete nothing.
    const [foreign] = await insertDevices(h, globex.org.id, [{ name: "keep-me" }]);
    expect((await h.api("POST", "/api/v1/groups/devices/bulk-delete", { key: acme.key, body: { deviceIds: [foreign] } })).body.deleted).toBe(0);
    expect(await h.services.prisma.device.findUnique({ where: { id: foreign } })).not.toBeNull();
  });
});

describe("security", () => {
  it("secures every group operation", async () => {
    const reads: [string, string, unknown?][] = [
      ["GET", "/api/v1/groups/stats"],
      ["GET", "/api/v1/groups/label-keys"],
      ["GET", "/api/v1/groups/label-keys/site/values"],
      ["GET", "/api/v1/groups/query?site=berlin"],
      ["POST", "/api/v1/groups/query", { labelSelector: { site: "berlin" } }],
      ["GET", "/api/v1/groups/by-label/site"],
      ["POST", "/api/v1/groups/eligibility", { labelSelector: { site: "berlin" }, architectures: ["arm"] }],
    ];
    for (const [method, path, body] of reads) await expectSecured(h, acme, globex, { method, path, body, permission: "devices:read" });
    await expectSecured(h, acme, globex, { method: "POST", path: "/api/v1/groups/labels/bulk", body: { labelSelector: { site: "rome" }, set: { s: "1" } }, permission: "devices:write" });
    await expectSecured(h, acme, globex, { method: "POST", path: "/api/v1/groups/devices/bulk-delete", body: { labelSelector: { site: "nowhere" } }, permission: "devices:write" });
  });

  it("answers each tenant from its own devices only", async () => {
    const res = await h.api("GET", "/api/v1/groups/by-label/site", { key: globex.key });
    expect(res.body.total).toBe(fleet.slice(0, 50).filter((d) => "site" in d.labels).length);
  });

  it("is reachable through the tRPC client", async () => {
    const { createTRPCClient, httpBatchLink } = await import("@trpc/client");
    const client = createTRPCClient<import("../../../src/trpc/router.js").AppRouter>({
      links: [httpBatchLink({ url: `${h.url}/trpc`, headers: { "x-api-key": acme.key } })],
    });
    const res = await client.groups.query.query({ labelSelector: { tier: "core" } });
    expect(res.labelSelector).toEqual({ tier: "core" });
  });
});
