// Last activity (Platform → Organizations and Platform → Users): an organization's
// lastActivityAt is the last time a member signed in or made a request in it, one of its API
// keys was used, or one of its devices called; a user's lastActivityAt is their last sign-in or
// request in a session (lastLoginAt the last sign-in). Each is written beside the request, at
// most once a minute per record in a process (src/trpc/activity.ts): the test moves the clock
// of the in-process service a minute on to see the next one written.
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { createHarness, type Harness } from "../../support/harness.js";
import { createEnrollmentToken, enroll, ensureCa, heartbeat } from "../agent/fleet-support.js";

let h: Harness;

beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h?.close());
afterEach(() => vi.useRealTimers());

type Org = { lastActivityAt: string | null; updatedAt: string };
const organization = async (id: string) => (await h.api<Org>("GET", `/api/v1/organizations/${id}`)).body;
const user = async (id: string) => (await h.api<{ lastLoginAt: string | null; lastActivityAt: string | null }>("GET", `/api/v1/users/${id}`)).body;

/** Resolves to the organization's lastActivityAt once it is later than `after` (null: once it is set). */
const activityAfter = (id: string, after: string | null) =>
  expect.poll(async () => {
    const at = (await organization(id)).lastActivityAt;
    return at !== null && (after === null || at > after) ? at : null;
  }, { timeout: 15_000 }).not.toBeNull();

/** Moves the clock (Date only; timers run as they do) `ms` on. */
function clockOn(ms: number) {
  const now = Date.now();
  vi.useFakeTimers({ toFake: ["Date"] });
  vi.setSystemTime(now + ms);
}

describe("lastActivityAt", () => {
  it("an organization nobody acted in has none; a member's sign-in sets it and the user's; their request a minute later moves both on", async () => {
    const tenant = await h.createTenant("Quiet Harbour");
    expect((await organization(tenant.org.id)).lastActivityAt).toBeNull();
    expect(await user(tenant.user.id)).toMatchObject({ lastLoginAt: null, lastActivityAt: null });

    const signedIn = Date.now();
    const token = await h.login(tenant.user.email, tenant.user.password);
    await activityAfter(tenant.org.id, null);
    const first = (await organization(tenant.org.id)).lastActivityAt!;
    expect(Date.parse(first)).toBeGreaterThanOrEqual(signedIn - 1000);
    const signIn = await user(tenant.user.id);
    expect(signIn.lastLoginAt).not.toBeNull();
    expect(signIn.lastActivityAt).not.toBeNull();

    clockOn(61_000);
    expect((await h.api("GET", "/api/v1/devices?limit=1", { key: null, token })).status).toBe(200);
    await activityAfter(tenant.org.id, first);
    await expect.poll(async () => (await user(tenant.user.id)).lastActivityAt! > signIn.lastActivityAt!, { timeout: 15_000 }).toBe(true);
    expect((await user(tenant.user.id)).lastLoginAt).toBe(signIn.lastLoginAt); // no new sign-in
  });

  it("an API key's use sets it without touching updatedAt; a device's call a minute later moves it on", async () => {
    const tenant = await h.createTenant("Busy Harbour");
    const before = await organization(tenant.org.id);
    expect(before.lastActivityAt).toBeNull();

    await ensureCa(h, tenant.key);
    const { token } = await createEnrollmentToken(h, tenant.key);
    const device = await enroll(h, token);
    await activityAfter(tenant.org.id, null);
    const byKey = await organization(tenant.org.id);
    expect(byKey.updatedAt).toBe(before.updatedAt); // activity is no change to the organization

    clockOn(61_000);
    expect((await heartbeat(h, device, { status: "online" })).status).toBe(200);
    await activityAfter(tenant.org.id, byKey.lastActivityAt);
  });

  it("the platform's list shows it for each organization", async () => {
    const tenant = await h.createTenant("Listed Harbour");
    expect((await h.api("GET", "/api/v1/devices?limit=1", { key: tenant.key })).status).toBe(200);
    await activityAfter(tenant.org.id, null);
    const list = await h.api<{ items: { id: string; lastActivityAt: string | null }[] }>("GET", "/api/v1/organizations/with-stats?limit=100");
    expect(list.status).toBe(200);
    const listed = list.body.items.find((o) => o.id === tenant.org.id);
    expect(listed?.lastActivityAt).toBe((await organization(tenant.org.id)).lastActivityAt);
  });
});
