// An OCI registry from the browser, against Debian's docker-registry on loopback behind htpasswd:
// created with a username:password credential that is never shown again (an edit keeps it),
// health-checked, disabled and enabled, synced now with the run's record shown as the API
// answers it (per repository, skipped tags with their reasons), and the sync history listing the
// runs newest first as the API does. The bootstrap Super Admin adds a global OCI registry with
// priority and mandatory; a viewer sees the registries without any write control.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Locator } from "playwright-core";
import { peerAvailable } from "../../support/peers.js";
import { ADMIN, type ConsoleService } from "../../support/console-service.js";
import { consoleSuite, waitForText } from "../../support/browser.js";
import { startOciRegistry, type OciRegistryServer } from "../../support/oci-registry.js";
import { appYaml } from "../../http/registries-git/support.js";

const PASSWORD = "oci-pull-password-" + "q4".repeat(8);

interface SyncRecord {
  id: string; status: string; createdAt: string; repositoriesFound: number; applicationsFound: number; applicationsImported: number; applicationsUpdated: number; syncDurationMs: number;
  perRepository: Array<{ repository: string; tagCount: number; found: number; imported: number; updated: number; errors: string[] }>;
  skipped: Array<{ repository: string; tag: string; reason: string }>;
}

let registry: OciRegistryServer;

/** The cells of a table's body rows, as text. */
const bodyRows = (table: Locator) =>
  table.getByRole("row").evaluateAll((trs) => trs.slice(1).map((tr) => Array.from((tr as unknown as { cells: ArrayLike<{ textContent: string | null }> }).cells, (td) => td.textContent ?? "")));

/** What a sync report shows of a run: its facts (the relative time left out), repositories and skipped tags. */
async function shownRun(report: Locator) {
  const facts = await report.getByRole("definition").allTextContents();
  return {
    facts: [facts[0], ...facts.slice(2)],
    repositories: await bodyRows(report.getByRole("table", { name: "Repositories read" })),
    skipped: await bodyRows(report.getByRole("table", { name: "Skipped tags" })),
  };
}

/** The same, from the API's record. */
function expectedRun(record: SyncRecord) {
  return {
    facts: [record.status, ...[record.repositoriesFound, record.applicationsFound, record.applicationsImported, record.applicationsUpdated].map(String), record.syncDurationMs < 1000 ? `${Math.round(record.syncDurationMs)} ms` : expect.stringMatching(/^\d+(\.\d)? s$|^\d+ min \d+ s$/)],
    repositories: record.perRepository.map((r) => [r.repository, String(r.tagCount), String(r.found), String(r.imported), String(r.updated), r.errors.join("; ") || "none"]),
    skipped: record.skipped.map((s) => [s.repository, s.tag, s.reason]),
  };
}

/** The console's one date format (web/src/ui/time.tsx), as the test browser (en-US, UTC) shows it: "Dec 7, 2026, 2:09:01 AM". */
const consoleDate = new Intl.DateTimeFormat("en-US", { year: "numeric", month: "short", day: "numeric", hour: "numeric", minute: "2-digit", second: "2-digit", timeZone: "UTC" });
const runLabel = (record: SyncRecord) => `Sync run of ${consoleDate.format(new Date(record.createdAt))}`;

describe.skipIf(!peerAvailable("chromium") || !peerAvailable("docker-registry") || !peerAvailable("htpasswd"))("console OCI registries", () => {
  const suite = consoleSuite();
  let service: ConsoleService;

  beforeAll(async () => {
    service = suite.service;
    registry = await startOciRegistry({ basic: { username: "puller", password: PASSWORD } });
    await registry.pushPackage("edge/vision", "1.0.0", appYaml("vision", "1.0.0", { name: "Vision" }));
    await registry.pushImage("edge/vision", "latest");
    await registry.pushPackage("edge/metrics", "2.1.0", appYaml("metrics", "2.1.0", { name: "Metrics" }));
  }, 60_000);
  afterAll(async () => {
    await registry?.close();
  });

  it("creates with a hidden credential, checks health, disables and enables, syncs now and lists the sync history as the API does", async () => {
    const ui = await suite.open({ user: ADMIN });
    service.rememberSecret(PASSWORD);
    await ui.goto("/registries");
    const ociCard = ui.page.getByRole("region", { name: "OCI registries", exact: true });
    await ociCard.getByText("No OCI registries").waitFor();

    // Create, with a username:password credential the form checks and never shows again.
    await ociCard.getByRole("button", { name: "Add OCI registry" }).click();
    const dialog = ui.page.getByRole("dialog", { name: "Add an OCI registry" });
    await dialog.getByLabel("Name").fill("Edge packages");
    await dialog.getByLabel("URL").fill(registry.url);
    await dialog.getByLabel("Description").fill("the edge team's packages");
    await dialog.getByLabel("Repositories").fill("edge/vision\nedge/metrics");
    await dialog.getByLabel("Authentication").selectOption("BASIC");
    await dialog.getByLabel("Credential (username:password)").fill("puller-without-colon");
    await dialog.getByText("Write it as username:password.").waitFor();
    expect(await dialog.getByRole("button", { name: "Add OCI registry" }).isDisabled()).toBe(true);
    await dialog.getByLabel("Credential (username:password)").fill(`puller:${PASSWORD}`);
    await dialog.getByLabel("Sync interval (minutes)").fill("0");
    await ui.audit();
    await dialog.getByRole("button", { name: "Add OCI registry" }).click();
    await ui.page.getByText("OCI registry “Edge packages” added").waitFor();
    const [stored] = (await service.call("GET", "/api/v1/registries/oci")).items;
    expect(stored).toMatchObject({
      name: "Edge packages", url: registry.url, description: "the edge team's packages", repositories: ["edge/vision", "edge/metrics"],
      authType: "BASIC", hasCredentials: true, enabled: true, syncIntervalMinutes: 0, verifyTls: true,
    });
    const row = ociCard.getByRole("row").filter({ hasText: "Edge packages" });
    await waitForText(row.getByRole("cell").nth(4), "manual only");
    expect(await ui.page.content()).not.toContain(PASSWORD);

    // Edit: the credential field starts empty; saving without one keeps the stored credential.
    await row.getByRole("button", { name: "Edit Edge packages" }).click();
    const edit = ui.page.getByRole("dialog", { name: "Edit OCI registry “Edge packages”" });
    expect(await edit.getByLabel("Credential (username:password)").inputValue()).toBe("");
    await edit.getByText("Leave empty to keep the stored one.").waitFor();
    await edit.getByLabel("Description").fill("");
    await edit.getByRole("button", { name: "Save" }).click();
    await ui.page.getByText("OCI registry “Edge packages” saved").waitFor();
    expect(await service.call("GET", `/api/v1/registries/oci/${stored.id}`)).toMatchObject({ description: null, authType: "BASIC", hasCredentials: true });

    // Health check: healthy (the stored credential passes the registry's htpasswd).
    await row.getByRole("button", { name: "Check the health of Edge packages" }).click();
    await ui.page.getByText(/^Edge packages is healthy \(\d+ ms\)$/).waitFor();
    await waitForText(row.getByRole("cell").nth(2), (text) => text.startsWith("healthy"));
    expect((await service.call("GET", `/api/v1/registries/oci/${stored.id}`)).healthStatus).toBe("healthy");

    // Disable, then enable again: syncing is offered only while enabled.
    await row.getByRole("button", { name: "Disable Edge packages" }).click();
    await waitForText(row.getByRole("cell").nth(3), "disabled");
    expect(await row.getByRole("button", { name: "Sync now Edge packages" }).isDisabled()).toBe(true);
    expect((await service.call("GET", `/api/v1/registries/oci/${stored.id}`)).enabled).toBe(false);
    await row.getByRole("button", { name: "Enable Edge packages" }).click();
    await waitForText(row.getByRole("cell").nth(3), "enabled");
    expect((await service.call("GET", `/api/v1/registries/oci/${stored.id}`)).enabled).toBe(true);

    // Sync now: the run's record, as the API stores it.
    await row.getByRole("button", { name: "Sync now Edge packages" }).click();
    const result = ui.page.getByRole("dialog", { name: "Sync of “Edge packages”" });
    await result.getByRole("table", { name: "Repositories read" }).waitFor();
    const [run] = (await service.call<{ data: SyncRecord[] }>("GET", `/api/v1/registries/oci/${stored.id}/sync-history?limit=10&offset=0`)).data;
    expect(run).toMatchObject({ status: "success", repositoriesFound: 2, applicationsFound: 2, applicationsImported: 2, applicationsUpdated: 0 });
    await result.getByRole("definition").first().waitFor();
    expect(await shownRun(result)).toEqual(expectedRun(run!));
    expect((await shownRun(result)).skipped).toEqual([["edge/vision", "latest", expect.stringMatching(/not an application package/)]]);
    await ui.audit();
    await ui.screenshot("registries-oci-sync-result");
    await result.getByRole("button", { name: "Close" }).click();
    await waitForText(row.getByRole("cell").nth(5), (text) => text !== "never" && text.trim() !== "");

    // A second run (through the API): the history lists both, newest first, as the API does.
    await service.call("POST", `/api/v1/registries/oci/${stored.id}/sync`);
    const history = await service.call<{ total: number; data: SyncRecord[] }>("GET", `/api/v1/registries/oci/${stored.id}/sync-history?limit=5&offset=0`);
    expect(history.total).toBe(2);
    expect(history.data[1]!.id).toBe(run!.id);
    await row.getByRole("button", { name: "Sync history of Edge packages" }).click();
    const historyDialog = ui.page.getByRole("dialog", { name: "Sync history of “Edge packages”" });
    const entries = historyDialog.getByRole("listitem");
    await expect.poll(() => entries.count()).toBe(2);
    for (const [i, record] of history.data.entries()) {
      const entry = entries.nth(i);
      expect(await entry.getByRole("definition").first().evaluate((dd) => (dd as unknown as { parentElement: { getAttribute(n: string): string } }).parentElement.getAttribute("aria-label"))).toBe(runLabel(record));
      expect(await shownRun(entry)).toEqual(expectedRun(record));
    }
    // Every run fits the dialog (its tables scroll inside it rather than push past its edge).
    const dialogBox = (await historyDialog.boundingBox())!;
    for (let i = 0; i < 2; i++) {
      const box = (await entries.nth(i).boundingBox())!;
      expect(box.x + box.width).toBeLessThanOrEqual(dialogBox.x + dialogBox.width);
    }
    await ui.audit();
    await ui.screenshot("registries-oci-sync-history");
    await historyDialog.getByRole("button", { name: "Close" }).click();
    expect(await ui.page.content()).not.toContain(PASSWORD);
  });

  it("lets the bootstrap Super Admin add a global OCI registry with priority and mandatory", async () => {
    const ui = await suite.open({ user: ADMIN });
    await ui.goto("/registries");
    const globalCard = ui.page.getByRole("region", { name: "Global OCI registries" });
    await globalCard.getByText("No global registries").waitFor();
    await globalCard.getByRole("button", { name: "Add global registry" }).click();
    const dialog = ui.page.getByRole("dialog", { name: "Add a global OCI registry" });
    await dialog.getByLabel("Name").fill("Vendor apps");
    await dialog.getByLabel("URL").fill(registry.url);
    await dialog.getByLabel("Repositories").fill("edge/metrics");
    await dialog.getByLabel("Priority").fill("-3");
    await dialog.getByText("Give a whole number from 0 to 1000000.").waitFor();
    expect(await dialog.getByRole("button", { name: "Add global OCI registry" }).isDisabled()).toBe(true);
    await dialog.getByLabel("Priority").fill("7");
    await dialog.getByRole("checkbox", { name: "Mandatory (synced for every organization)" }).check();
    await ui.audit();
    await dialog.getByRole("button", { name: "Add global OCI registry" }).click();
    await ui.page.getByText("Global registry “Vendor apps” added").waitFor();
    const [stored] = (await service.call("GET", "/api/v1/global-registries/oci")).items;
    expect(stored).toMatchObject({ name: "Vendor apps", url: registry.url, repositories: ["edge/metrics"], priority: 7, mandatory: true, enabled: true, authType: "NONE" });
    const row = globalCard.getByRole("row").filter({ hasText: "Vendor apps" });
    expect(await row.getByRole("cell").nth(0).textContent()).toBe("7");
    await waitForText(row.getByRole("cell").nth(3), "mandatory");
    await ui.screenshot("registries-global");

    // A refused submit (ui/FormFooter): the dialog stays open with what was typed and the API's message.
    ui.expectStatus(409, "globalRegistries.oci.create");
    await globalCard.getByRole("button", { name: "Add global registry" }).click();
    await dialog.getByLabel("Name").fill("Vendor apps");
    await dialog.getByLabel("URL").fill(registry.url);
    await dialog.getByRole("button", { name: "Add global OCI registry" }).click();
    await waitForText(dialog.getByRole("alert"), /named "Vendor apps" already exists/);
    expect(await dialog.getByLabel("Name").inputValue()).toBe("Vendor apps");
    expect(await dialog.getByRole("button", { name: "Add global OCI registry" }).isEnabled()).toBe(true);
    await dialog.getByRole("button", { name: "Cancel" }).click();
    await dialog.waitFor({ state: "hidden" });
    expect(await globalCard.getByRole("row").count()).toBe(2);
  });

  it("shows a viewer the registries and their history without any write control", async () => {
    const viewer = await service.createUser("viewer");
    const ui = await suite.open({ user: viewer });
    await ui.goto("/registries");
    const ociCard = ui.page.getByRole("region", { name: "OCI registries", exact: true });
    const row = ociCard.getByRole("row").filter({ hasText: "Edge packages" });
    await row.waitFor();
    const main = ui.page.getByRole("main");
    const buttons = await main.getByRole("button").evaluateAll((els) => els.map((el) => (el as unknown as { getAttribute(n: string): string | null; textContent: string | null }).getAttribute("aria-label") ?? el.textContent ?? ""));
    expect(buttons).toContain("Sync history of Edge packages");
    expect(buttons.filter((name) => /^(Add|Edit|Delete|Disable|Enable|Sync now|Check the health)/.test(name.trim()))).toEqual([]);
    expect(await ui.page.getByRole("region", { name: "Global OCI registries" }).count()).toBe(0);
    await row.getByRole("button", { name: "Sync history of Edge packages" }).click();
    await expect.poll(() => ui.page.getByRole("dialog", { name: "Sync history of “Edge packages”" }).getByRole("listitem").count()).toBe(2);
    await ui.audit();
    await ui.screenshot("registries-viewer");
    await ui.page.getByRole("dialog", { name: "Sync history of “Edge packages”" }).getByRole("button", { name: "Close" }).click();

    // A list that cannot be read (ui/QueryTable): the error in place of the table, with a retry that reads it again.
    const unreachable = (url: URL) => url.pathname.includes("registries.oci.list");
    await ui.page.route(unreachable, (route) => route.abort("connectionrefused"));
    await ui.page.reload();
    const retry = ociCard.getByRole("button", { name: "Try again" });
    await retry.waitFor();
    await ociCard.getByText("The service cannot be reached.", { exact: false }).waitFor();
    expect(await ociCard.getByRole("table").count()).toBe(0);
    await ui.page.unroute(unreachable);
    await retry.click();
    await row.waitFor();
    expect(await retry.count()).toBe(0);
  });
});
