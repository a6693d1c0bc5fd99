// The audit log in Chromium: actions taken in this test (in the browser and through the API,
// by different people) show with their actors; the filters and the text search narrow the
// list exactly as the API's search does, and live in the URL; an entry opens to its changed
// fields; an export with the current filters downloads as a real file (CSV and JSON) holding
// the API's rows; a viewer sees the log and no write control; the platform activity view
// and its export are for Super Admins. A device is named by its name, linked to its page.
import fs from "node:fs";
import { beforeAll, describe, expect, it } from "vitest";
import type { Locator } from "playwright-core";
import { peerAvailable } from "../../support/peers.js";
import { ADMIN, type ConsoleService, type User } from "../../support/console-service.js";
import { consoleSuite, waitForPath, waitForText, type ConsolePage } from "../../support/browser.js";
import { csvRecords } from "../../support/csv.js";

interface Entry { id: string; action: string; actorType: string; user: { name: string; email: string } | null; outcome: string }
interface Page<T> { items: T[]; total: number }

let service: ConsoleService;
let olga: User;
let vera: User;
let olgaToken: string;

/** The table's rows as [action, actor] pairs, in order. */
async function shownRows(table: Locator): Promise<{ action: string; actor: string }[]> {
  return table.locator(":scope > tbody > tr:has(button[aria-expanded])").evaluateAll((rows) => rows.map((r) => {
    const cells = r.querySelectorAll("td");
    return { actor: (cells[2]?.textContent ?? "").trim(), action: (cells[3]?.textContent ?? "").trim() };
  }));
}

/**
 * Opens the audit log from the sidebar once the page is live: the realtime ticket the console
 * asks for on a page load is itself an audit entry, so it must be written before the log is read.
 */
async function openAuditLog(ui: ConsolePage) {
  await ui.page.getByRole("status").filter({ hasText: /^Live$/ }).waitFor();
  await ui.page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Audit log" }).click();
  await waitForPath(ui.page, (url) => url.pathname === "/audit", "the audit log");
  await ui.settled();
  await ui.audit();
}

/** Waits until the table shows the API's first page for `query`, row by row. */
async function expectTableIsApi(ui: ConsolePage, table: Locator, query: string) {
  const api = await service.call<Page<Entry>>("GET", `/api/v1/audit?limit=25&${query}`);
  const expected = api.items.map((e) => ({ action: e.action, name: e.user?.name ?? null }));
  const deadline = Date.now() + 20_000;
  let shown: { action: string; actor: string }[] = [];
  for (;;) {
    await ui.settled();
    shown = await shownRows(table);
    const same = shown.length === expected.length && shown.every((r, i) => r.action === expected[i].action && (!expected[i].name || r.actor.includes(expected[i].name!)));
    if (same) return api;
    if (Date.now() > deadline) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  expect(shown).toEqual(expected);
  return api;
}

describe.skipIf(!peerAvailable("chromium"))("console audit log", () => {
  const suite = consoleSuite();

  beforeAll(async () => {
    service = suite.service;
    olga = await service.createUser("admin", { name: "Olga Operator" });
    vera = await service.createUser("viewer", { name: "Vera Viewer" });
    olgaToken = await service.bearer(olga);
    // Olga creates an enrollment token through the API; Vera tries to, and is refused.
    const created = await service.api("POST", "/api/v1/enrollment-tokens", { key: null, token: olgaToken, body: { name: "Audit bench" } });
    expect(created.status).toBe(201);
    service.rememberSecret(created.body.token);
    const veraToken = await service.bearer(vera);
    expect((await service.api("POST", "/api/v1/enrollment-tokens", { key: null, token: veraToken, body: { name: "Not allowed" } })).status).toBe(403);
  });

  it("shows the test's actions with their actors; filters and search narrow it as the API does; an entry opens to its changes", async () => {
    const ui = await suite.open({ user: ADMIN });
    // The admin renames themself in the browser: an update with a before and an after.
    await ui.goto("/profile");
    const account = ui.page.getByRole("form", { name: "Account" });
    const before = await account.getByLabel("Name").inputValue();
    await account.getByLabel("Name").fill("Ada Auditor");
    await account.getByRole("button", { name: "Save name" }).click();
    await ui.page.getByText("Name saved").waitFor();

    await openAuditLog(ui);
    const table = ui.page.getByRole("table", { name: "Audit entries" });
    const all = await expectTableIsApi(ui, table, "");
    await ui.audit();
    // The actions of this test, with the people who took them.
    const rows = await shownRows(table);
    expect(rows).toContainEqual({ action: "profile.update", actor: expect.stringContaining("Ada Auditor") });
    expect(rows).toContainEqual({ action: "enrollmentTokens.create", actor: expect.stringContaining("Olga Operator") });
    expect(rows).toContainEqual({ action: "permission.denied", actor: expect.stringContaining("Vera Viewer") });
    await waitForText(ui.page.getByRole("heading", { level: 1 }).locator("xpath=following-sibling::p"), `${all.total.toLocaleString("en-US")} entries in this organization, newest first`);
    await ui.screenshot("audit-log");

    // The admin's update opens to its changed field, before and after.
    const update = all.items.find((e) => e.action === "profile.update")!;
    const row = table.locator(":scope > tbody > tr").filter({ hasText: "profile.update" }).first();
    await row.getByRole("button", { name: /^Details of profile\.update/ }).click();
    const changes = ui.page.getByRole("table", { name: "Changed fields of profile.update" });
    expect(await changes.getByRole("row").filter({ hasText: "name" }).getByRole("cell").allTextContents()).toEqual([before, "Ada Auditor"]);
    expect(await row.getByRole("button", { name: /^Details of profile\.update/ }).getAttribute("aria-expanded")).toBe("true");
    const detail = await service.call<Entry & { changes: unknown }>("GET", `/api/v1/audit/${update.id}`);
    expect(detail.changes).toEqual({ name: { from: before, to: "Ada Auditor" } });
    await ui.audit();
    await ui.screenshot("audit-log-entry");

    // The person filter: Olga's actions only, = the API's search by her id.
    await ui.page.getByLabel("Person").selectOption({ label: `Olga Operator (${olga.email})` });
    await waitForPath(ui.page, (url) => url.searchParams.get("user") === olga.id, "the person in the URL");
    const olgas = await expectTableIsApi(ui, table, `userId=${olga.id}`);
    expect(olgas.items.map((e) => e.action)).toContain("enrollmentTokens.create");
    await waitForText(ui.page.getByRole("heading", { level: 1 }).locator("xpath=following-sibling::p"), `${olgas.total} matching entries, newest first`);

    // Outcome and the text search, together with the person: each narrows as the API does.
    await ui.page.getByLabel("Person").selectOption({ label: "Anyone" });
    await ui.page.getByLabel("Outcome").selectOption("denied");
    await waitForPath(ui.page, (url) => url.searchParams.get("outcome") === "denied" && !url.searchParams.has("user"), "the outcome in the URL");
    const denied = await expectTableIsApi(ui, table, "outcome=denied");
    expect(denied.items.some((e) => e.user?.name === "Vera Viewer")).toBe(true);
    await ui.page.getByLabel("Outcome").selectOption("");
    await ui.page.getByLabel("Search").fill("ENROLLMENTTOKENS");
    await waitForPath(ui.page, (url) => url.searchParams.get("q") === "ENROLLMENTTOKENS", "the search in the URL");
    const found = await expectTableIsApi(ui, table, "search=ENROLLMENTTOKENS");
    expect(found.total).toBeGreaterThan(0);
    expect(found.total).toBeLessThan(all.total);

    // The action (a prefix) and a time range that holds nothing yet: the empty state.
    await ui.page.getByLabel("Search").fill("");
    await ui.page.getByLabel("Action").fill("profile.*");
    await waitForPath(ui.page, (url) => url.searchParams.get("action") === "profile.*" && !url.searchParams.has("q"), "the action in the URL");
    await expectTableIsApi(ui, table, "action=profile.*");
    await ui.page.getByLabel("From").fill("2099-01-01T00:00");
    await waitForPath(ui.page, (url) => url.searchParams.get("from") === "2099-01-01T00:00:00.000Z", "the start in the URL");
    await ui.page.getByText("No entry matches these filters").waitFor();
    await ui.audit();

    // A link with the filters opens the page with them.
    await ui.goto(`/audit?actorType=api_key&entityType=enrollment_token`);
    expect(await ui.page.getByLabel("Actor type").inputValue()).toBe("api_key");
    expect(await ui.page.getByLabel("Entity type").inputValue()).toBe("enrollment_token");
    await expectTableIsApi(ui, table, "actorType=api_key&entityType=enrollment_token");
    await ui.page.getByRole("button", { name: "Clear filters" }).first().click();
    await waitForPath(ui.page, (url) => url.search === "", "no filter in the URL");
  });

  it("exports the current filters as a CSV and a JSON file holding the API's rows", async () => {
    const ui = await suite.open({ user: ADMIN });
    await ui.goto(`/audit?user=${olga.id}`);
    const expected = await service.call<Page<Entry>>("GET", `/api/v1/audit?userId=${olga.id}&limit=200`);
    expect(expected.total).toBeGreaterThan(0);

    const [download] = await Promise.all([
      ui.page.waitForEvent("download"),
      ui.page.getByRole("button", { name: "Export audit log as CSV" }).click(),
    ]);
    expect(download.suggestedFilename()).toMatch(/^audit-log-\d{8}T\d{6}Z\.csv$/);
    const records = csvRecords(fs.readFileSync((await download.path())!, "utf8"));
    expect(records.map((r) => r.id)).toEqual(expected.items.map((e) => e.id));
    expect(records.map((r) => r.action)).toEqual(expected.items.map((e) => e.action));
    expect(new Set(records.map((r) => r.userId))).toEqual(new Set([olga.id]));
    // The same file the API streams for these filters.
    const api = await service.api("POST", "/api/v1/audit/export", { body: { userId: olga.id, format: "csv" } });
    expect(csvRecords(api.text).map((r) => r.id)).toEqual(records.map((r) => r.id));
    const status = ui.page.getByRole("status", { name: "Export of the audit log" });
    const size = fs.statSync((await download.path())!).size;
    await waitForText(status, `Downloaded ${download.suggestedFilename()}: ${expected.total} rows, ${size < 1000 ? `${size} B` : `${(size / 1000).toFixed(size < 10_000 ? 1 : 0)} kB`}.`);
    await ui.audit();
    await ui.screenshot("audit-log-export");

    const [json] = await Promise.all([
      ui.page.waitForEvent("download"),
      ui.page.getByRole("button", { name: "Export audit log as JSON" }).click(),
    ]);
    expect(json.suggestedFilename()).toMatch(/\.json$/);
    const rows = JSON.parse(fs.readFileSync((await json.path())!, "utf8")) as { id: string }[];
    expect(rows.map((r) => r.id)).toEqual(expected.items.map((e) => e.id));
    await waitForText(status, new RegExp(`^Downloaded .*\\.json: ${expected.total} rows`));

    // Each export is itself recorded, with its filters, as the admin's.
    const exports = await service.call<Page<Entry & { changes: { userId?: string; format?: string } }>>("GET", "/api/v1/audit?action=audit.export&limit=2");
    expect(exports.items.map((e) => e.changes.format)).toEqual(["json", "csv"]);
    expect(exports.items.every((e) => e.changes.userId === olga.id)).toBe(true);
  });

  it("shows a viewer the log and its exports, and no write control; the platform activity is not theirs", async () => {
    const ui = await suite.open({ user: vera });
    await ui.goto("/");
    await openAuditLog(ui);
    const table = ui.page.getByRole("table", { name: "Audit entries" });
    await expectTableIsApi(ui, table, "");
    const buttons = (await ui.page.getByRole("main").getByRole("button").evaluateAll((els) => els.map((el) => el.getAttribute("aria-label") ?? (el.textContent ?? "").trim())));
    const reads = /^(Export audit log as (CSV|JSON)|Details of .*|Previous page|Next page|Clear filters)$/;
    expect(buttons.filter((name) => !reads.test(name))).toEqual([]);
    expect(await ui.page.getByRole("link", { name: "Platform activity" }).count()).toBe(0);
    await ui.screenshot("audit-log-viewer");

    await ui.goto("/activity");
    await ui.page.getByRole("heading", { name: "For Super Admins only" }).waitFor();
    expect(await ui.page.getByRole("button", { name: /Export/ }).count()).toBe(0);
  });

  it("shows a Super Admin the platform's activity, filtered as the API filters it, and exports it", async () => {
    const ui = await suite.open({ user: ADMIN });
    await ui.goto("/audit");
    await ui.page.getByRole("link", { name: "Platform activity" }).click();
    await waitForPath(ui.page, (url) => url.pathname === "/activity", "the platform activity");
    await ui.settled();
    await ui.audit();
    const table = ui.page.getByRole("table", { name: "Platform activity" });
    const summaries = () => table.locator("tbody tr").evaluateAll((rows) => rows.map((r) => (r.querySelectorAll("td")[2]?.textContent ?? "").trim()));
    const all = await service.call<Page<{ id: string; summary: string; type: string }>>("GET", "/api/v1/activity?limit=25");
    await expect.poll(summaries, { timeout: 20_000 }).toEqual(all.items.map((a) => a.summary));
    await ui.screenshot("platform-activity");

    await ui.page.getByLabel("Type").selectOption({ label: "Sign-in" });
    await waitForPath(ui.page, (url) => url.searchParams.get("type") === "login", "the type in the URL");
    const logins = await service.call<Page<{ id: string; summary: string; userEmail: string }>>("GET", "/api/v1/activity?types=login&limit=25");
    expect(logins.total).toBeGreaterThan(0);
    await expect.poll(summaries, { timeout: 20_000 }).toEqual(logins.items.map((a) => a.summary));
    await ui.settled();

    const [download] = await Promise.all([
      ui.page.waitForEvent("download"),
      ui.page.getByRole("button", { name: "Export platform activity as CSV" }).click(),
    ]);
    expect(download.suggestedFilename()).toMatch(/^activity-.*\.csv$/);
    const records = csvRecords(fs.readFileSync((await download.path())!, "utf8"));
    expect(records).toHaveLength(logins.total);
    expect(new Set(records.map((r) => r.type))).toEqual(new Set(["login"]));
    expect(records.map((r) => r.id).slice(0, logins.items.length)).toEqual(logins.items.map((a) => a.id));
    await waitForText(ui.page.getByRole("status", { name: "Export of the platform activity" }), new RegExp(`^Downloaded .*\\.csv: ${logins.total} rows`));
    await ui.audit();
  });
  it("names a device by its name, linked to its page, in the audit log and the platform activity", async () => {
    const fleet = await service.enrollFleet({ prefix: "audited", devices: 1 });
    const id = fleet.devices[0].deviceId!;
    expect((await service.api("PATCH", `/api/v1/devices/${id}`, { body: { name: "Sorter north" } })).status).toBe(200);

    const ui = await suite.open({ user: ADMIN });
    await ui.goto(`/audit?entityId=${id}`);
    const table = ui.page.getByRole("table", { name: "Audit entries" });
    const renamed = table.locator("tbody tr").filter({ hasText: "devices.update" });
    await waitForText(renamed.locator("td").nth(4), `device Sorter north${id}`);
    await ui.screenshot("audit-log-device-named");

    // The activity's summary names it too.
    await ui.goto("/activity");
    await ui.page.getByRole("table", { name: "Platform activity" }).getByText("API key: devices.update device “Sorter north”").first().waitFor();

    await ui.goto(`/audit?entityId=${id}`);
    await renamed.getByRole("link", { name: "Sorter north" }).click();
    await waitForPath(ui.page, (url) => url.pathname === `/devices/${id}`, "the device's page");
    await ui.page.getByRole("heading", { level: 1, name: /Sorter north/ }).waitFor();
    await ui.settled();
    await ui.audit();
  });
});
