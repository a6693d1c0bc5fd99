// Organization status: disable (spec op 3), enable, suspend, and what a suspended or
// disabled organization's keys and users can still do (nothing; nothing is deleted either).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADMIN_EMAIL, ADMIN_PASSWORD, createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { expectSecured } from "../../support/security.js";
import { adminUser, issuePaths, randomId, superAdminKeyWithoutPlatform } from "../users/support.js";

let h: Harness;
let acme: Tenant;
let globex: Tenant;

const disable = (id: string, body?: unknown, key?: string) => h.api("POST", `/api/v1/organizations/${id}/disable`, { body, key });

beforeAll(async () => {
  h = await createHarness();
  acme = await h.createTenant("Acme Status");
  globex = await h.createTenant("Globex Status");
});
afterAll(() => h?.close());

describe("POST /organizations/{id}/disable (op 3)", () => {
  it("disables with a reason, records reason and actor, and returns the organization", async () => {
    const t = await h.createTenant("Disable Me");
    const res = await disable(t.org.id, { reason: "contract ended" });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: t.org.id, slug: t.org.slug, status: "disabled", active: false });

    const admin = await adminUser(h);
    const row = await h.services.prisma.organization.findUniqueOrThrow({ where: { id: t.org.id } });
    expect(row).toMatchObject({ status: "disabled", statusReason: "contract ended", statusChangedBy: admin.id });
    expect(row.statusChangedAt).toBeInstanceOf(Date);

    const audit = await h.services.prisma.auditEntry.findFirstOrThrow({ where: { action: "organizations.disable", entityId: t.org.id } });
    expect(audit).toMatchObject({ outcome: "success", organizationId: t.org.id, userId: admin.id, actorType: "api_key", entityType: "organization" });
    expect(audit.message).toContain("contract ended");
    expect(audit.changes).toMatchObject({ reason: "contract ended" });
  });

  it("takes no reason at all", async () => {
    const t = await h.createTenant("No Reason");
    const res = await disable(t.org.id);
    expect(res.status).toBe(200);
    expect(res.body.status).toBe("disabled");
    expect((await h.services.prisma.organization.findUniqueOrThrow({ where: { id: t.org.id } })).statusReason).toBeNull();
  });

  it("answers a second disable with 409 Organization already disabled, changing nothing", async () => {
    const t = await h.createTenant("Twice Disabled");
    await disable(t.org.id, { reason: "first" });
    const again = await disable(t.org.id, { reason: "second" });
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ code: "CONFLICT", message: "Organization already disabled" });
    expect((await h.services.prisma.organization.findUniqueOrThrow({ where: { id: t.org.id } })).statusReason).toBe("first");
  });

  it("answers 404 for an unknown organization, 400 for a bad id or reason", async () => {
    const missing = await disable(randomId(), { reason: "x" });
    expect(missing.status).toBe(404);
    expect(missing.body.message).toBe("Organization not found");
    const badId = await disable("nope");
    expect(badId.status).toBe(400);
    expect(issuePaths(badId.body)).toContain("id");
    const badReason = await disable(acme.org.id, { reason: 5 });
    expect(badReason.status).toBe(400);
    expect(issuePaths(badReason.body)).toContain("reason");
    const longReason = await disable(acme.org.id, { reason: "r".repeat(501) });
    expect(issuePaths(longReason.body)).toContain("reason");
  });

  it("requires a Super Admin: a tenant owner and a Super Admin's key without platform:admin get 403", async () => {
    const own = await disable(acme.org.id, {}, acme.key);
    expect(own.status).toBe(403);
    expect(own.body.code).toBe("FORBIDDEN");
    const partial = await superAdminKeyWithoutPlatform(h);
    expect((await disable(acme.org.id, {}, partial)).status).toBe(403);
    await expectSecured(h, acme, globex, { method: "POST", path: `/api/v1/organizations/${acme.org.id}/disable`, body: {}, permission: "platform:admin" });
    expect((await h.services.prisma.organization.findUniqueOrThrow({ where: { id: acme.org.id } })).status).toBe("active");
  });
});

describe("a disabled or suspended organization", () => {
  it("refuses its keys and its users' tokens with 403 saying why, keeps everything, and comes back when enabled", async () => {
    const t = await h.createTenant("Locked Out");
    const token = await h.login(t.user.email, t.user.password);
    await h.services.prisma.device.create({ data: { organizationId: t.org.id, name: "kept" } });
    const read = (opts: { key?: string | null; token?: string }) => h.api("GET", `/api/v1/organizations/${t.org.id}`, opts);
    expect((await read({ key: t.key })).status).toBe(200);

    expect((await h.api("POST", `/api/v1/organizations/${t.org.id}/suspend`, { body: { reason: "unpaid invoice" } })).body.status).toBe("suspended");
    const byKey = await read({ key: t.key });
    expect(byKey.status).toBe(403);
    expect(byKey.body.message).toContain("suspended");
    const byToken = await read({ key: null, token });
    expect(byToken.status).toBe(403);
    expect(byToken.body.message).toContain("suspended");

    expect((await disable(t.org.id)).body.status).toBe("disabled");
    const disabled = await read({ key: t.key });
    expect(disabled.status).toBe(403);
    expect(disabled.body.message).toContain("disabled");

    // A Super Admin keeps access to restore it; nothing was deleted meanwhile.
    expect((await read({})).status).toBe(200);
    expect(await h.services.prisma.device.count({ where: { organizationId: t.org.id } })).toBe(1);
    expect(await h.services.prisma.apiKey.count({ where: { organizationId: t.org.id, revokedAt: null } })).toBe(1);
    expect(await h.services.prisma.membership.count({ where: { organizationId: t.org.id } })).toBe(1);

    const enabled = await h.api("POST", `/api/v1/organizations/${t.org.id}/enable`, { body: {} });
    expect(enabled.body).toMatchObject({ status: "active", active: true });
    expect((await read({ key: t.key })).status).toBe(200);
    expect((await read({ key: null, token })).status).toBe(200);
  });

  it("a Super Admin signed in with a bearer token may still disable and enable", async () => {
    const t = await h.createTenant("Bearer Managed");
    const token = await h.login(ADMIN_EMAIL, ADMIN_PASSWORD);
    expect((await h.api("POST", `/api/v1/organizations/${t.org.id}/disable`, { key: null, token, body: {} })).status).toBe(200);
    expect((await h.api("POST", `/api/v1/organizations/${t.org.id}/enable`, { key: null, token, body: {} })).status).toBe(200);
  });
});

describe("POST /organizations/{id}/enable and /suspend", () => {
  it("moves between the states and answers 409 for a move to the current state", async () => {
    const t = await h.createTenant("Mover");
    const enableActive = await h.api("POST", `/api/v1/organizations/${t.org.id}/enable`, { body: {} });
    expect(enableActive.status).toBe(409);
    expect(enableActive.body.message).toBe("Organization already active");

    const suspended = await h.api("POST", `/api/v1/organizations/${t.org.id}/suspend`, { body: { reason: "abuse review" } });
    expect(suspended.status).toBe(200);
    expect(suspended.body).toMatchObject({ status: "suspended", active: false });
    expect((await h.services.prisma.organization.findUniqueOrThrow({ where: { id: t.org.id } })).statusReason).toBe("abuse review");
    expect((await h.api("POST", `/api/v1/organizations/${t.org.id}/suspend`, { body: {} })).status).toBe(409);

    // disabled is the stronger state: suspending it would quietly weaken it.
    expect((await disable(t.org.id)).body.status).toBe("disabled");
    const weaken = await h.api("POST", `/api/v1/organizations/${t.org.id}/suspend`, { body: {} });
    expect(weaken.status).toBe(409);
    expect(weaken.body.message).toContain("enable it");

    const back = await h.api("POST", `/api/v1/organizations/${t.org.id}/enable`, { body: {} });
    expect(back.body).toMatchObject({ status: "active", active: true });
    const row = await h.services.prisma.organization.findUniqueOrThrow({ where: { id: t.org.id } });
    expect(row.statusReason).toBeNull();
  });

  it("enables a pending organization", async () => {
    const t = await h.createTenant("Pending Co");
    await h.services.prisma.organization.update({ where: { id: t.org.id }, data: { status: "pending" } });
    const res = await h.api("POST", `/api/v1/organizations/${t.org.id}/enable`, { body: {} });
    expect(res.body).toMatchObject({ status: "active", active: true });
  });

  it("are for Super Admins only", async () => {
    for (const action of ["enable", "suspend"]) {
      await expectSecured(h, acme, globex, { method: "POST", path: `/api/v1/organizations/${acme.org.id}/${action}`, body: {}, permission: "platform:admin" });
      expect((await h.api("POST", `/api/v1/organizations/${acme.org.id}/${action}`, { key: acme.key, body: {} })).status).toBe(403);
      expect((await h.api("POST", `/api/v1/organizations/${randomId()}/${action}`, { body: {} })).status).toBe(404);
    }
  });
});
