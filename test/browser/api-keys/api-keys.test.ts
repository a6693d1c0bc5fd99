// API keys in Chromium: the picker offers only what the creator holds; a key created in the
// browser is shown once (copy button, warning), works with plain HTTP requests carrying the
// X-API-Key header (as curl would send it) within its permissions, rotates (the old key then
// answers 401, the new one works; with a handover, both work until the old one's chosen end)
// and, revoked in the browser, is refused (401).
import { beforeAll, describe, expect, it } from "vitest";
import { peerAvailable } from "../../support/peers.js";
import { type ConsoleService, type User } from "../../support/console-service.js";
import { consoleSuite, waitForText } from "../../support/browser.js";

let service: ConsoleService;
let admin: User;

/** A request as curl would make it: no cookie, only the key in the header the spec names. */
async function withKey(key: string, path: string, init: RequestInit = {}) {
  const res = await fetch(`${service.url}${path}`, { ...init, headers: { "X-API-Key": key, ...(init.body ? { "content-type": "application/json" } : {}) } });
  return res.status;
}

describe.skipIf(!peerAvailable("chromium"))("console API keys", () => {
  const suite = consoleSuite();

  beforeAll(async () => {
    service = suite.service;
    admin = await service.createUser("admin", { name: "Ada Admin" });
  });

  it("a key created in the browser is shown once, works with its permissions, rotates, and is refused once revoked", async () => {
    const ui = await suite.open({ user: admin });
    await ui.context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: service.url });
    // The organization already has the bootstrap key of the test service.
    const keysPath = `/api/v1/organizations/${service.defaultOrg.id}/api-keys?limit=200`;
    const before = (await service.call("GET", keysPath)).items as { id: string }[];
    await ui.goto("/api-keys");
    await ui.page.getByRole("table", { name: "API keys" }).getByRole("row").nth(before.length).waitFor();
    await ui.page.getByRole("button", { name: "Create API key" }).first().click();
    const dialog = ui.page.getByRole("dialog", { name: "Create an API key" });

    // The picker: the catalogue from the API, grouped by resource, only what an admin holds.
    const catalogue = (await service.call("GET", "/api/v1/roles/permissions")).items as { key: string; resource: string }[];
    const session = await (await ui.context.request.get(`${service.url}/api/v1/tenant/context`)).json();
    // the picker renders once the session's permissions are known: wait for its first and last box
    const held = catalogue.filter((p) => session.permissions.includes(p.key));
    for (const p of [held[0], held[held.length - 1]]) await dialog.getByRole("checkbox", { name: p.key, exact: true }).waitFor();
    for (const { key } of catalogue) {
      const offered = dialog.getByRole("checkbox", { name: key, exact: true });
      expect(await offered.count(), key).toBe(session.permissions.includes(key) ? 1 : 0);
    }
    expect(session.permissions).not.toContain("tenant:switch"); // so the picker above left it out
    await dialog.getByRole("group", { name: "devices" }).waitFor();

    await dialog.getByLabel("Name").fill("CI reader");
    await dialog.getByLabel("Description (optional)").fill("reads the fleet for the pipeline");
    await dialog.getByRole("checkbox", { name: "devices:read", exact: true }).check();
    await dialog.getByRole("checkbox", { name: "members:read", exact: true }).check();
    await ui.audit();
    await ui.screenshot("api-keys-create");
    await dialog.getByRole("button", { name: "Create key" }).click();

    // Shown once, with a warning and a copy button that copies exactly the key.
    const card = ui.page.getByRole("region", { name: "Key “CI reader” created" });
    await card.waitFor();
    await card.getByRole("note").getByText(/shown only this once/).waitFor();
    const key = (await card.getByTestId("new-api-key").textContent())!.trim();
    service.rememberSecret(key);
    expect(key).toMatch(/^fm_[A-Za-z0-9]{40}$/);
    await card.getByRole("button", { name: "Copy key" }).click();
    await card.getByRole("button", { name: "Copied" }).waitFor();
    expect(await ui.page.evaluate(() => (globalThis as unknown as { navigator: { clipboard: { readText(): Promise<string> } } }).navigator.clipboard.readText())).toBe(key);
    await ui.settled();
    await ui.audit();
    await ui.screenshot("api-keys-created");

    // The API stored it as chosen, by its creator; only the prefix is ever read back.
    const listed = (await service.call("GET", keysPath)).items.filter((k: { id: string }) => !before.some((b) => b.id === k.id));
    expect(listed).toHaveLength(1);
    expect(listed[0]).toMatchObject({ name: "CI reader", keyPrefix: key.slice(0, 8), permissions: ["devices:read", "members:read"], createdBy: admin.id });

    // Plain requests with the key: what it was given works, anything else is refused.
    expect(await withKey(key, "/api/v1/devices")).toBe(200);
    expect(await withKey(key, `/api/v1/organizations/${service.defaultOrg.id}/members`)).toBe(200);
    expect(await withKey(key, "/api/v1/deployments")).toBe(403);
    expect(await withKey(key, "/api/v1/enrollment-tokens", { method: "POST", body: JSON.stringify({ name: "nope" }) })).toBe(403);

    // After a reload the key is gone from the page; the table shows its prefix, permissions, creator and last use.
    await ui.goto("/api-keys");
    expect(await ui.page.content()).not.toContain(key);
    const row = ui.page.getByRole("table", { name: "API keys" }).getByRole("row").filter({ hasText: "CI reader" });
    await waitForText(row, (t) => t.includes(`${key.slice(0, 8)}…`) && t.includes("devices:read") && t.includes("members:read") && t.includes("Ada Admin (you)"));
    // Used just now (by the requests above), as the API says once the use is recorded (written
    // beside the request, not before its answer: src/trpc/auth.ts); no expiry.
    await expect.poll(async () => (await service.call("GET", keysPath)).items.find((k: { name: string }) => k.name === "CI reader").lastUsedAt, { timeout: 10_000 }).toBeDefined();
    await waitForText(row.getByRole("cell").nth(4), "just now");
    await waitForText(row.getByRole("cell").nth(5), "never");
    await ui.screenshot("api-keys-list");

    // Rotate (the old key stops at once, the default): a new key like the old one; the old one answers 401 from then on.
    await ui.page.getByRole("button", { name: "Rotate CI reader" }).click();
    const rotate = ui.page.getByRole("dialog", { name: "Rotate “CI reader”?" });
    await ui.audit();
    await rotate.getByRole("button", { name: "Rotate key" }).click();
    await rotate.waitFor({ state: "hidden" });
    const rotated = ui.page.getByRole("region", { name: "Key “CI reader” rotated" });
    const newKey = (await rotated.getByTestId("new-api-key").textContent())!.trim();
    service.rememberSecret(newKey);
    expect(newKey).not.toBe(key);
    expect(await withKey(key, "/api/v1/devices")).toBe(401);
    expect(await withKey(newKey, "/api/v1/devices")).toBe(200);
    const afterRotation = (await service.call("GET", keysPath)).items.filter((k: { name: string }) => k.name === "CI reader");
    expect(afterRotation).toEqual([expect.objectContaining({ name: "CI reader", keyPrefix: newKey.slice(0, 8), permissions: ["devices:read", "members:read"], description: "reads the fleet for the pipeline" })]);
    // The old key is gone from the table, but its use is not: the new key names the key it
    // replaced and when that one was last used (by the requests above).
    expect(afterRotation[0].replaces).toMatchObject({ keyPrefix: key.slice(0, 8), lastUsedAt: expect.any(String), revokedAt: expect.any(String) });
    const rotatedRow = ui.page.getByRole("table", { name: "API keys" }).getByRole("row").filter({ hasText: `${newKey.slice(0, 8)}…` });
    await waitForText(rotatedRow.getByRole("cell").nth(1), `${newKey.slice(0, 8)}…replaces ${key.slice(0, 8)}…`);
    await waitForText(rotatedRow.getByRole("cell").nth(4), (t) => t.startsWith(`neverold key ${key.slice(0, 8)}…: `) && !t.endsWith("never"));

    // Rotate with a handover: the old key keeps working for an hour beside the new one.
    await ui.page.getByRole("button", { name: "Rotate CI reader" }).click();
    const handover = ui.page.getByRole("dialog", { name: "Rotate “CI reader”?" });
    await handover.getByLabel("The old key").selectOption({ label: "Keeps working for 1 hour" });
    await ui.audit();
    await handover.getByRole("button", { name: "Rotate key" }).click();
    await handover.waitFor({ state: "hidden" });
    const handedOver = ui.page.getByRole("region", { name: "Key “CI reader” rotated" });
    await waitForText(handedOver, (t) => t.includes(`The key starting ${newKey.slice(0, 8)} keeps working until`));
    const newestKey = (await handedOver.getByTestId("new-api-key").textContent())!.trim();
    service.rememberSecret(newestKey);
    expect(newestKey).not.toBe(newKey);
    expect(await withKey(newKey, "/api/v1/devices")).toBe(200);
    expect(await withKey(newestKey, "/api/v1/devices")).toBe(200);
    const pair = (await service.call("GET", keysPath)).items.filter((k: { name: string }) => k.name === "CI reader") as { keyPrefix: string; expiresAt?: string }[];
    expect(pair.map((k) => k.keyPrefix).sort()).toEqual([newKey.slice(0, 8), newestKey.slice(0, 8)].sort());
    const ending = Date.parse(pair.find((k) => k.keyPrefix === newKey.slice(0, 8))!.expiresAt!) - Date.now();
    expect(ending).toBeGreaterThan(55 * 60_000);
    expect(ending).toBeLessThanOrEqual(3_600_000);
    expect(pair.find((k) => k.keyPrefix === newestKey.slice(0, 8))!.expiresAt).toBeUndefined();
    const keysTable = ui.page.getByRole("table", { name: "API keys" });
    // The old key is marked replaced until its handover ends, and can no longer be rotated; the
    // newest names it.
    const oldRow = keysTable.getByRole("row").filter({ has: ui.page.getByText("replaced", { exact: true }) });
    // (It replaced the first key in its turn, and still says so.)
    await waitForText(oldRow.getByRole("cell").nth(1), `${newKey.slice(0, 8)}…replacedreplaces ${key.slice(0, 8)}…`);
    await waitForText(oldRow.getByRole("cell").nth(5), (t) => /^in (1 hr\.|5\d min\.|60 min\.)$/.test(t));
    expect(await oldRow.getByRole("button", { name: "Rotate CI reader" }).count()).toBe(0);
    const newestRow = keysTable.getByRole("row").filter({ hasText: `${newestKey.slice(0, 8)}…` });
    await waitForText(newestRow.getByRole("cell").nth(1), `${newestKey.slice(0, 8)}…replaces ${newKey.slice(0, 8)}…`);
    expect((await service.call("GET", keysPath)).items.find((k: { keyPrefix: string }) => k.keyPrefix === newKey.slice(0, 8)).replacedById)
      .toBe((await service.call("GET", keysPath)).items.find((k: { keyPrefix: string }) => k.keyPrefix === newestKey.slice(0, 8)).id);
    await ui.settled();
    await ui.screenshot("api-keys-rotated-handover");

    // Revoke in the browser, first the handed-over key, then the newest: each is refused from
    // the next request on, and gone from the list.
    await oldRow.getByRole("button", { name: "Revoke CI reader" }).click();
    const revokeOld = ui.page.getByRole("dialog", { name: "Revoke “CI reader”?" });
    await revokeOld.getByRole("button", { name: "Revoke key" }).click();
    await revokeOld.waitFor({ state: "hidden" });
    await oldRow.waitFor({ state: "detached" });
    expect(await withKey(newKey, "/api/v1/devices")).toBe(401);
    await ui.page.getByRole("button", { name: "Revoke CI reader" }).click();
    const revoke = ui.page.getByRole("dialog", { name: "Revoke “CI reader”?" });
    await revoke.getByRole("button", { name: "Revoke key" }).click();
    await revoke.waitFor({ state: "hidden" });
    await keysTable.getByRole("row").filter({ hasText: "CI reader" }).waitFor({ state: "detached" });
    expect(await withKey(newestKey, "/api/v1/devices")).toBe(401);
    expect((await service.call("GET", keysPath)).items.map((k: { id: string }) => k.id)).toEqual(before.map((b) => b.id));
  }, 180_000);
});
