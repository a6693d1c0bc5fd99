// Organizations: create, list, get (by id and slug), update (spec op 8), rename, and the
// description and branding under organizations:branding.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADMIN_KEY, createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { expectSecured } from "../../support/security.js";
import { issuePaths, randomId, superAdminKeyWithoutPlatform } from "../users/support.js";

let h: Harness;
let acme: Tenant;
let globex: Tenant;

const SPEC_FIELDS = [
  "id", "name", "slug", "description", "settings", "branding", "status", "lastActivityAt",
  "primaryContact", "billingEmail", "active", "createdAt", "updatedAt", "stats",
];

beforeAll(async () => {
  h = await createHarness();
  acme = await h.createTenant("Acme Orgs");
  globex = await h.createTenant("Globex Orgs");
});
afterAll(() => h?.close());

describe("POST /organizations", () => {
  it("creates an organization (201) with the slug derived from the name", async () => {
    const res = await h.api("POST", "/api/v1/organizations", { body: { name: "Ünïted Widgets, Inc.", description: "widgets" } });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ name: "Ünïted Widgets, Inc.", slug: "united-widgets-inc", description: "widgets", status: "active", active: true, settings: {}, branding: {} });
    for (const field of Object.keys(res.body)) expect(SPEC_FIELDS).toContain(field);
    const row = await h.services.prisma.organization.findUniqueOrThrow({ where: { id: res.body.id } });
    expect(row.slug).toBe("united-widgets-inc");
    const audit = await h.services.prisma.auditEntry.findFirst({ where: { action: "organizations.create", entityId: res.body.id } });
    expect(audit?.entityType).toBe("organization");
  });

  it("picks the next free slug when the derived one is taken", async () => {
    const a = await h.api("POST", "/api/v1/organizations", { body: { name: "Twin Co" } });
    const b = await h.api("POST", "/api/v1/organizations", { body: { name: "Twin Co" } });
    expect([a.body.slug, b.body.slug]).toEqual(["twin-co", "twin-co-2"]);
  });

  it("answers 409 for an explicit slug that exists", async () => {
    const res = await h.api("POST", "/api/v1/organizations", { body: { name: "Another", slug: acme.org.slug } });
    expect(res.status).toBe(409);
    expect(res.body.code).toBe("CONFLICT");
    expect(res.body.message).toContain(acme.org.slug);
  });

  it("answers 400 naming the field for a missing name, a bad slug or a long description", async () => {
    const noName = await h.api("POST", "/api/v1/organizations", { body: { slug: "ok-slug" } });
    expect(noName.status).toBe(400);
    expect(issuePaths(noName.body)).toContain("name");
    const badSlug = await h.api("POST", "/api/v1/organizations", { body: { name: "Fine", slug: "Not URL safe!" } });
    expect(badSlug.status).toBe(400);
    expect(issuePaths(badSlug.body)).toContain("slug");
    const longDescription = await h.api("POST", "/api/v1/organizations", { body: { name: "Fine", description: "x".repeat(501) } });
    expect(issuePaths(longDescription.body)).toContain("description");
  });

  it("is for Super Admins only", async () => {
    await expectSecured(h, acme, globex, { method: "POST", path: "/api/v1/organizations", body: { name: "Nope" }, permission: "platform:admin" });
    expect((await h.api("POST", "/api/v1/organizations", { key: acme.key, body: { name: "Nope" } })).status).toBe(403);
    const partial = await superAdminKeyWithoutPlatform(h);
    const res = await h.api("POST", "/api/v1/organizations", { key: partial, body: { name: "Nope" } });
    expect(res.status).toBe(403);
    expect(res.body.message).toContain("platform:admin");
  });
});

describe("GET /organizations", () => {
  it("lists every organization for a Super Admin, newest first, with paging and search", async () => {
    const all = await h.api("GET", "/api/v1/organizations?limit=200");
    expect(all.status).toBe(200);
    expect(all.body.total).toBe(await h.services.prisma.organization.count());
    const times = all.body.items.map((o: { createdAt: string }) => o.createdAt);
    expect([...times].sort().reverse()).toEqual(times);

    const page = await h.api("GET", "/api/v1/organizations?limit=1&offset=1");
    expect(page.body.items).toHaveLength(1);
    expect(page.body.hasMore).toBe(all.body.total > 2);

    const found = await h.api("GET", "/api/v1/organizations?search=GLOBEX");
    expect(found.body.items.map((o: { id: string }) => o.id)).toEqual([globex.org.id]);
    // LIKE's wildcards in a search match only themselves
    const [percent] = await Promise.all(["Rebate 50% Ltd", "Rebate 500 Ltd"].map((name) => h.api("POST", "/api/v1/organizations", { body: { name } })));
    const literal = await h.api("GET", `/api/v1/organizations?search=${encodeURIComponent("50%")}`);
    expect(literal.body.items.map((o: { id: string }) => o.id)).toEqual([percent.body.id]);
    const suspended = await h.api("GET", "/api/v1/organizations?status=suspended");
    expect(suspended.body.total).toBe(0);
  });

  it("shows a tenant only its own organization", async () => {
    const res = await h.api("GET", "/api/v1/organizations", { key: acme.key });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ total: 1, hasMore: false });
    expect(res.body.items[0].id).toBe(acme.org.id);
  });

  it("rejects a bad limit and is secured", async () => {
    const res = await h.api("GET", "/api/v1/organizations?limit=500");
    expect(res.status).toBe(400);
    expect(issuePaths(res.body)).toContain("limit");
    await expectSecured(h, acme, globex, { method: "GET", path: "/api/v1/organizations", permission: "organizations:read" });
  });
});

describe("GET /organizations/{id} and /organizations/by-slug/{slug} (op 5)", () => {
  it("reads its own organization, optionally with stats", async () => {
    const res = await h.api("GET", `/api/v1/organizations/${acme.org.id}`, { key: acme.key });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: acme.org.id, slug: acme.org.slug, active: true });
    expect(res.body.stats).toBeUndefined();
    const t = await h.createTenant("Stats Once");
    const withStats = await h.api("GET", `/api/v1/organizations/${t.org.id}?includeStats=true`, { key: t.key });
    expect(withStats.body.stats).toEqual({ userCount: 1, activeUsers: 1, deviceCount: 0, activeDevices: 0, deploymentCount: 0, runningDeployments: 0 });
  });

  it("answers 404 for another tenant's organization, an unknown id and an unknown slug; 400 for a bad id", async () => {
    expect((await h.api("GET", `/api/v1/organizations/${globex.org.id}`, { key: acme.key })).status).toBe(404);
    expect((await h.api("GET", `/api/v1/organizations/by-slug/${globex.org.slug}`, { key: acme.key })).status).toBe(404);
    expect((await h.api("GET", `/api/v1/organizations/${randomId()}`)).status).toBe(404);
    expect((await h.api("GET", "/api/v1/organizations/by-slug/no-such-slug")).status).toBe(404);
    const bad = await h.api("GET", "/api/v1/organizations/not-a-uuid");
    expect(bad.status).toBe(400);
    expect(issuePaths(bad.body)).toContain("id");
  });

  it("is secured", async () => {
    await expectSecured(h, acme, globex, {
      method: "GET", path: `/api/v1/organizations/${acme.org.id}`, permission: "organizations:read", foreignPath: `/api/v1/organizations/${acme.org.id}`,
    });
    await expectSecured(h, acme, globex, {
      method: "GET", path: `/api/v1/organizations/by-slug/${acme.org.slug}`, permission: "organizations:read", foreignPath: `/api/v1/organizations/by-slug/${acme.org.slug}`,
    });
  });
});

describe("PATCH /organizations/{id} (op 8)", () => {
  it("updates every field of the spec and stores them", async () => {
    const t = await h.createTenant("Patch Me");
    const body = {
      name: "Patched Name",
      description: "new description",
      settings: { timezone: "UTC", retentionDays: 30 },
      branding: { color: "#123456", logo: { url: "https://example.test/logo.png" } },
      primaryContact: "Jane Roe",
      billingEmail: "billing@patch.example.test",
    };
    const res = await h.api("PATCH", `/api/v1/organizations/${t.org.id}`, { body });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ ...body, id: t.org.id, slug: t.org.slug, status: "active", active: true });
    const row = await h.services.prisma.organization.findUniqueOrThrow({ where: { id: t.org.id } });
    expect(row).toMatchObject({ name: "Patched Name", primaryContact: "Jane Roe", billingEmail: "billing@patch.example.test" });
    expect(row.settings).toEqual(body.settings);
    expect(row.branding).toEqual(body.branding);

    // Fields not sent stay; null clears the nullable ones.
    const partial = await h.api("PATCH", `/api/v1/organizations/${t.org.id}`, { body: { description: null, primaryContact: null } });
    expect(partial.status).toBe(200);
    expect(partial.body.description).toBeUndefined();
    expect(partial.body).toMatchObject({ name: "Patched Name", primaryContact: null, billingEmail: "billing@patch.example.test" });
  });

  it("maps the deprecated active field onto status", async () => {
    const t = await h.createTenant("Active Flag");
    const off = await h.api("PATCH", `/api/v1/organizations/${t.org.id}`, { body: { active: false } });
    expect(off.body).toMatchObject({ status: "suspended", active: false });
    const again = await h.api("PATCH", `/api/v1/organizations/${t.org.id}`, { body: { active: false, name: "Still Off" } });
    expect(again.body).toMatchObject({ status: "suspended", name: "Still Off" });
    const on = await h.api("PATCH", `/api/v1/organizations/${t.org.id}`, { body: { active: true } });
    expect(on.body).toMatchObject({ status: "active", active: true });
  });

  it("answers 400 naming each invalid field, and changes nothing", async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ name: 42 }, "name"],
      [{ name: "" }, "name"],
      [{ billingEmail: "not-an-email" }, "billingEmail"],
      [{ settings: "dark" }, "settings"],
      [{ branding: [1, 2] }, "branding"],
      [{ active: "false" }, "active"],
      [{ description: 7 }, "description"],
      [{ primaryContact: { first: "x" } }, "primaryContact"],
    ];
    for (const [body, field] of cases) {
      const res = await h.api("PATCH", `/api/v1/organizations/${acme.org.id}`, { body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.code).toBe("BAD_REQUEST");
      expect(issuePaths(res.body), JSON.stringify(body)).toContain(field);
    }
    const row = await h.services.prisma.organization.findUniqueOrThrow({ where: { id: acme.org.id } });
    expect(row.name).toBe("Acme Orgs");
  });

  it("answers 404 for an unknown organization", async () => {
    const res = await h.api("PATCH", `/api/v1/organizations/${randomId()}`, { body: { name: "Ghost" } });
    expect(res.status).toBe(404);
    expect(res.body.message).toBe("Organization not found");
  });

  it("requires a Super Admin: an owner gets 403, and so does a Super Admin's key without platform:admin", async () => {
    const own = await h.api("PATCH", `/api/v1/organizations/${acme.org.id}`, { key: acme.key, body: { name: "Mine" } });
    expect(own.status).toBe(403);
    const partial = await superAdminKeyWithoutPlatform(h);
    expect((await h.api("PATCH", `/api/v1/organizations/${acme.org.id}`, { key: partial, body: { name: "Mine" } })).status).toBe(403);
    await expectSecured(h, acme, globex, { method: "PATCH", path: `/api/v1/organizations/${acme.org.id}`, body: { name: "Mine" }, permission: "platform:admin" });
    const row = await h.services.prisma.organization.findUniqueOrThrow({ where: { id: acme.org.id } });
    expect(row.name).toBe("Acme Orgs");
  });
});

describe("POST /organizations/{id}/rename", () => {
  it("lets the tenant rename its own organization; the slug stays", async () => {
    const t = await h.createTenant("Rename Corp");
    const res = await h.api("POST", `/api/v1/organizations/${t.org.id}/rename`, { key: t.key, body: { name: "Renamed Corp" } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ name: "Renamed Corp", slug: t.org.slug });
    expect((await h.services.prisma.organization.findUniqueOrThrow({ where: { id: t.org.id } })).name).toBe("Renamed Corp");
  });

  it("answers 400 for a bad name, 404 across tenants, 403 without organizations:write", async () => {
    const bad = await h.api("POST", `/api/v1/organizations/${acme.org.id}/rename`, { key: acme.key, body: { name: "x" } });
    expect(bad.status).toBe(400);
    expect(issuePaths(bad.body)).toContain("name");
    await expectSecured(h, acme, globex, {
      method: "POST", path: `/api/v1/organizations/${acme.org.id}/rename`, body: { name: "Acme Orgs" },
      permission: "organizations:write", foreignPath: `/api/v1/organizations/${acme.org.id}/rename`,
    });
    const viewer = await h.createKey(acme.org.id, ["*"], { role: "viewer" });
    expect((await h.api("POST", `/api/v1/organizations/${acme.org.id}/rename`, { key: viewer, body: { name: "Viewer Was Here" } })).status).toBe(403);
  });
});

describe("PATCH /organizations/{id}/branding", () => {
  it("lets an owner change the description and the branding; nothing else changes; audited", async () => {
    const t = await h.createTenant("Brand Corp");
    const accessToken = await h.login(t.user.email, t.user.password);
    const branding = { primaryColor: "#0a7d5a", logo: "data:image/png;base64,iVBORw0KGgo=", theme: "kept" };
    const res = await h.api("PATCH", `/api/v1/organizations/${t.org.id}/branding`, {
      key: null, token: accessToken, body: { description: "Parcel robots", branding, name: "Not Renamed" },
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ id: t.org.id, name: "Brand Corp", description: "Parcel robots", branding });
    const row = await h.services.prisma.organization.findUniqueOrThrow({ where: { id: t.org.id } });
    expect(row).toMatchObject({ name: "Brand Corp", description: "Parcel robots", branding });
    const entry = await h.services.prisma.auditEntry.findFirst({ where: { action: "organizations.brand", entityId: t.org.id } });
    expect(entry).toMatchObject({ organizationId: t.org.id, userId: t.user.id, outcome: "success" });

    // Only what is given changes: the description alone keeps the branding.
    const again = await h.api("PATCH", `/api/v1/organizations/${t.org.id}/branding`, { key: t.key, body: { description: null } });
    expect(again.status).toBe(200);
    expect(again.body.description ?? null).toBeNull();
    expect(again.body.branding).toEqual(branding);
  });

  it("answers 400 naming the field, 403 without organizations:branding (viewers, administrators), 404 across tenants", async () => {
    const path = `/api/v1/organizations/${acme.org.id}/branding`;
    const before = await h.services.prisma.organization.findUniqueOrThrow({ where: { id: acme.org.id } });
    const notObject = await h.api("PATCH", path, { key: acme.key, body: { branding: "blue" } });
    expect(notObject.status).toBe(400);
    expect(notObject.body.message).toContain("branding");
    const long = await h.api("PATCH", path, { key: acme.key, body: { description: "x".repeat(501) } });
    expect(long.status).toBe(400);
    expect(issuePaths(long.body)).toContain("description");
    await expectSecured(h, acme, globex, { method: "PATCH", path, body: { description: "Mine" }, permission: "organizations:branding", foreignPath: path });
    for (const role of ["viewer", "admin"] as const) {
      const key = await h.createKey(acme.org.id, ["*"], { role });
      const refused = await h.api("PATCH", path, { key, body: { description: `${role} was here` } });
      expect(refused.status, role).toBe(403);
    }
    const after = await h.services.prisma.organization.findUniqueOrThrow({ where: { id: acme.org.id } });
    expect(after).toMatchObject({ description: before.description, branding: before.branding });
  });

  it("is in the permission catalogue the role editor reads, held by owners and not by administrators", async () => {
    const catalogue = await h.api("GET", "/api/v1/roles/permissions", { key: acme.key });
    expect(catalogue.status).toBe(200);
    expect(JSON.stringify(catalogue.body)).toContain("organizations:branding");
    const roles = await h.api("GET", "/api/v1/system-roles");
    const byName = new Map((roles.body.items as { name: string; permissions: string[] }[]).map((r) => [r.name, r.permissions]));
    expect(byName.get("owner")).toContain("*");
    expect(byName.get("admin")).not.toContain("organizations:branding");
    expect(byName.get("admin")).toContain("organizations:write");
  });
});

it("documents every organization operation in openapi.json", async () => {
  const doc = await h.api("GET", "/api/v1/openapi.json", { key: null });
  const paths = doc.body.paths;
  for (const [method, path] of [
    ["get", "/organizations"], ["post", "/organizations"], ["get", "/organizations/stats"], ["get", "/organizations/empty"],
    ["get", "/organizations/with-stats"], ["post", "/organizations/bulk-delete"], ["get", "/organizations/by-slug/{slug}"],
    ["get", "/organizations/{id}"], ["patch", "/organizations/{id}"], ["delete", "/organizations/{id}"],
    ["post", "/organizations/{id}/enable"], ["post", "/organizations/{id}/suspend"], ["post", "/organizations/{id}/disable"],
    ["post", "/organizations/{id}/rename"], ["patch", "/organizations/{id}/branding"], ["get", "/organizations/{id}/can-delete"], ["post", "/organizations/{id}/users/bulk"],
    ["post", "/organizations/{id}/users/{userId}/reset-password"],
  ]) expect(paths[path]?.[method], `${method} ${path}`).toBeDefined();
  expect(ADMIN_KEY).toBeTruthy();
});
