// The deployment list in Chromium: its filters (state, application) come from the URL and
// show what the API answers for them, and a running deployment's progress moves without a
// reload as simulated devices report through the agent protocol (realtime events).
import { beforeAll, describe, expect, it } from "vitest";
import type { Page } from "playwright-core";
import { peerAvailable } from "../../support/peers.js";
import { ADMIN, type ConsoleService, type SimulatedFleet } from "../../support/console-service.js";
import { consoleSuite, UI_TIMEOUT_MS, waitForPath, waitForText } from "../../support/browser.js";
import { component, importApplications, type ImportedCatalog } from "./support.js";

let service: ConsoleService;
let catalog: ImportedCatalog;
let kiln: SimulatedFleet;

interface Listed {
  id: string;
  name: string;
  status: string;
  progress: { running: number; total: number };
}

async function apiList(query: string): Promise<Listed[]> {
  return (await service.call<{ items: Listed[] }>("GET", `/api/v1/deployments?limit=100${query}`)).items;
}

/** The deployment names the table shows, in order. */
async function rowNames(page: Page): Promise<string[]> {
  const table = page.getByRole("table", { name: "Deployments" });
  return table.locator("tbody tr .deployment-name a").allTextContents();
}

async function waitForRows(page: Page, expected: string[]): Promise<void> {
  await expect.poll(() => rowNames(page), { timeout: 20_000, interval: 100 }).toEqual(expected);
}

async function createDeployment(name: string, app: string, start: boolean): Promise<string> {
  const created = await service.call<{ id: string }>("POST", "/api/v1/deployments", {
    body: { name, applicationId: catalog.apps[app], version: "1.0.0", profileId: "compose", target: { labelSelector: { site: "kiln" } } },
  });
  if (start) await service.call("POST", `/api/v1/deployments/${created.id}/start`);
  return created.id;
}

describe.skipIf(!peerAvailable("chromium"))("console deployment list", () => {
  const suite = consoleSuite();

  beforeAll(async () => {
    service = suite.service;
    const profiles = [{ id: "compose", type: "compose", components: [component("app")] }];
    catalog = await importApplications(service, { "edge-proxy": { name: "Edge Proxy", profiles }, "vision-probe": { name: "Vision Probe", profiles } });
    kiln = await service.enrollFleet({ prefix: "kiln", devices: 4, labels: { site: "kiln" } });
  }, 180_000);

  it("says what to do when there is none, then filters by state and application from the URL as the API does", async () => {
    const ui = await suite.open({ user: ADMIN });
    await ui.goto("/deployments");
    await ui.page.getByText("No deployments yet").waitFor();
    expect(await ui.page.getByRole("link", { name: "Create a deployment" }).getAttribute("href")).toBe("/deployments/new");

    await createDeployment("proxy draft", "edge-proxy", false);
    await createDeployment("probe draft", "vision-probe", false);
    await createDeployment("proxy live", "edge-proxy", true);

    await ui.goto("/deployments?state=rolling_out");
    const running = await apiList("&state=rolling_out");
    expect(running.map((d) => d.name)).toEqual(["proxy live"]);
    await waitForRows(ui.page, running.map((d) => d.name));
    expect(await ui.page.getByLabel("State", { exact: true }).inputValue()).toBe("rolling_out");

    await ui.goto(`/deployments?application=${catalog.apps["edge-proxy"]}`);
    const proxies = await apiList(`&applicationId=${catalog.apps["edge-proxy"]}`);
    expect(proxies.map((d) => d.name)).toEqual(["proxy live", "proxy draft"]);
    await waitForRows(ui.page, proxies.map((d) => d.name));
    // The filter's choices are the applications' own read, which may land after the rows: until
    // then the select has no such option and reads "".
    await expect.poll(() => ui.page.getByLabel("Application", { exact: true }).inputValue(), { timeout: UI_TIMEOUT_MS }).toBe(catalog.apps["edge-proxy"]);

    // Choosing a state in the page adds it to the URL beside the application.
    await ui.page.getByLabel("State", { exact: true }).selectOption("draft");
    await waitForPath(ui.page, (url) => url.searchParams.get("state") === "draft" && url.searchParams.get("application") === catalog.apps["edge-proxy"], "state=draft in the URL");
    const drafts = await apiList(`&state=draft&applicationId=${catalog.apps["edge-proxy"]}`);
    expect(drafts.map((d) => d.name)).toEqual(["proxy draft"]);
    await waitForRows(ui.page, ["proxy draft"]);
    await ui.audit();

    // A filter that matches nothing says so and offers the way back.
    await ui.page.getByLabel("State", { exact: true }).selectOption("stopping");
    await ui.page.getByText("No deployment matches these filters").waitFor();
    await ui.page.getByRole("button", { name: "Clear filters" }).first().click();
    await waitForPath(ui.page, (url) => url.search === "", "no filter in the URL");
    await waitForRows(ui.page, (await apiList("")).map((d) => d.name));
    await ui.audit();
    await ui.screenshot("deployments-list");
  }, 120_000);

  it("moves a running deployment's progress live as its devices report", async () => {
    const id = await createDeployment("probe live", "vision-probe", true);
    const ui = await suite.open({ user: ADMIN });
    // unfiltered: once every device runs it, it is completed (no longer rolling out) and stays listed
    await ui.goto("/deployments");
    await ui.page.getByRole("status").filter({ hasText: "Live" }).waitFor();
    const row = ui.page.getByRole("table", { name: "Deployments" }).getByRole("row").filter({ has: ui.page.getByRole("link", { name: "probe live", exact: true }) });
    await waitForText(row, (t) => t.includes("0/4 running"));
    await ui.page.evaluate(() => { (globalThis as unknown as { stillTheSamePage: boolean }).stillTheSamePage = true; });

    // The devices heartbeat until each runs it; every report is a realtime event the page follows.
    // A quarter of a second apart, as a busy agent does: faster, they would spend their
    // per-device budget (RATE_LIMIT_PER_DEVICE, 600 a minute) and be refused with 429.
    await expect
      .poll(async () => {
        await kiln.heartbeat();
        return (await service.call<Listed>("GET", `/api/v1/deployments/${id}`)).progress;
      }, { timeout: 60_000, interval: 250 })
      .toMatchObject({ running: 4, total: 4 });
    await waitForText(row, (t) => t.includes("4/4 running"));
    const bar = row.getByRole("progressbar");
    expect(await bar.getAttribute("aria-valuenow")).toBe("4");
    expect(await bar.getAttribute("aria-label")).toBe("Progress of probe live: 4 running");
    expect(await ui.page.evaluate(() => (globalThis as unknown as { stillTheSamePage?: boolean }).stillTheSamePage)).toBe(true);
    await ui.audit();
    await ui.screenshot("deployments-list-live");
  }, 120_000);

  it("reads well in the dark theme: the list and the form pass axe", async () => {
    const ui = await suite.open({ user: ADMIN, colorScheme: "dark" });
    await ui.goto("/deployments");
    expect(await ui.page.locator("html").getAttribute("data-theme")).toBe("dark");
    await waitForRows(ui.page, (await apiList("")).map((d) => d.name));
    await ui.screenshot("dark-deployments");
    await ui.goto("/deployments/new");
    await ui.page.getByLabel("Application", { exact: true }).selectOption({ label: "Vision Probe (1.0.0)" });
    await ui.page.getByRole("radio", { name: /compose/ }).waitFor();
    await ui.audit();
    await ui.screenshot("dark-deployment-form");
  }, 60_000);

  it("shows a viewer the list without a write control, and the form as not theirs, asking for nothing refused", async () => {
    const viewer = await service.createUser("viewer");
    const ui = await suite.open({ user: viewer });
    await ui.goto("/deployments");
    await waitForRows(ui.page, (await apiList("")).map((d) => d.name));
    expect(await ui.page.getByRole("link", { name: "New deployment" }).count()).toBe(0);
    await ui.goto("/deployments/new");
    await ui.page.getByText("Your role cannot create or change deployments").waitFor();
    expect(await ui.page.getByLabel("Name", { exact: true }).count()).toBe(0);
    expect(ui.service.requestLog().filter((r) => r.status === 403)).toEqual([]);
  }, 60_000);
});
