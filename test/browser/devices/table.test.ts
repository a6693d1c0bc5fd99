// The device table in Chromium, over 32 simulated devices: paging, sorting and filtering
// live in the URL (a reload shows the same view, a shared link opens it) and every page of
// rows is the API's page; selected devices get a label in one go, or are deleted after a
// confirmation that names how many, and the API shows it.
import { beforeAll, describe, expect, it } from "vitest";
import type { Page } from "playwright-core";
import { peerAvailable } from "../../support/peers.js";
import { ADMIN, type ConsoleService, type SimulatedFleet } from "../../support/console-service.js";
import { consoleSuite, waitForPath, waitForText, type ConsolePage } from "../../support/browser.js";
import { eventually } from "../../support/server-process.js";

let service: ConsoleService;
let berlin: SimulatedFleet;
let munich: SimulatedFleet;

/** The device names of the table's rows, top to bottom. */
async function rowNames(page: Page): Promise<string[]> {
  const rows = page.getByRole("table", { name: "Devices" }).locator("tbody tr");
  return rows.evaluateAll((trs) => trs.map((tr) => (tr as unknown as { querySelector(s: string): { textContent: string } | null }).querySelector("a")?.textContent ?? ""));
}

/** The API's page of device names for the same query. */
async function apiNames(query: string): Promise<string[]> {
  const page = await service.call<{ items: { name: string }[] }>("GET", `/api/v1/devices?${query}`);
  return page.items.map((d) => d.name);
}

/** Waits until the table shows exactly these rows (and the range says so). */
async function expectRows(ui: ConsolePage, names: string[], range: string) {
  await waitForText(ui.page.getByRole("navigation", { name: "Device pages" }).locator("span").first(), range);
  await eventually(async () => JSON.stringify(await rowNames(ui.page)) === JSON.stringify(names), 20_000, `rows ${names.slice(0, 3).join(", ")}…`)
    .catch(async (err: Error) => {
      throw new Error(`${err.message}; the table shows ${JSON.stringify(await rowNames(ui.page))}`);
    });
}

function searchOf(page: Page): Record<string, string> {
  return Object.fromEntries(new URL(page.url()).searchParams);
}

describe.skipIf(!peerAvailable("chromium"))("console device table", () => {
  const suite = consoleSuite();

  beforeAll(async () => {
    service = suite.service;
    berlin = await service.enrollFleet({ prefix: "berlin", devices: 20, labels: { site: "berlin" } });
    munich = await service.enrollFleet({ prefix: "munich", devices: 12, labels: { site: "munich" } });
    for (const device of munich.devices.slice(0, 3)) device.failing = true;
    await munich.heartbeat(munich.devices.slice(0, 3));
  });


  it("pages through the fleet with the page in the URL", async () => {
    const ui = await suite.open({ user: ADMIN });
    await ui.goto("/devices?limit=25");
    await expectRows(ui, await apiNames("limit=25&offset=0&sort=name&order=asc"), "1–25 of 32");
    await ui.screenshot("devices-table");

    await ui.page.getByRole("button", { name: "Next page" }).click();
    await waitForPath(ui.page, (url) => url.searchParams.get("offset") === "25", "offset=25 in the URL");
    await expectRows(ui, await apiNames("limit=25&offset=25&sort=name&order=asc"), "26–32 of 32");
    expect(await ui.page.getByRole("button", { name: "Next page" }).isDisabled()).toBe(true);
    await ui.audit();

    // Rows per page: back to the first page, 50 of them.
    await ui.page.getByLabel("Rows per page").selectOption("50");
    await waitForPath(ui.page, (url) => !url.searchParams.has("offset") && !url.searchParams.has("limit"), "the default page size");
    await expectRows(ui, await apiNames("limit=50&offset=0&sort=name&order=asc"), "1–32 of 32");

    await ui.page.reload();
    await ui.settled();
    await expectRows(ui, await apiNames("limit=50&offset=0&sort=name&order=asc"), "1–32 of 32");
  });

  it("sorts by the column headers, the sort in the URL, and a reload keeps it", async () => {
    const ui = await suite.open({ user: ADMIN });
    await ui.goto("/devices");
    const table = ui.page.getByRole("table", { name: "Devices" });

    await table.getByRole("button", { name: "Last seen" }).click();
    await waitForPath(ui.page, (url) => url.searchParams.get("sort") === "lastSeenAt" && url.searchParams.get("order") === "asc", "sort=lastSeenAt&order=asc");
    await expectRows(ui, await apiNames("limit=50&sort=lastSeenAt&order=asc"), "1–32 of 32");
    expect(await table.getByRole("columnheader", { name: "Last seen" }).getAttribute("aria-sort")).toBe("ascending");

    await table.getByRole("button", { name: "Last seen" }).click();
    await waitForPath(ui.page, (url) => url.searchParams.get("order") === "desc", "order=desc");
    const newestFirst = await apiNames("limit=50&sort=lastSeenAt&order=desc");
    await expectRows(ui, newestFirst, "1–32 of 32");

    await table.getByRole("button", { name: "Status" }).click();
    await waitForPath(ui.page, (url) => url.searchParams.get("sort") === "status", "sort=status");
    const byStatus = await apiNames("limit=50&sort=status&order=asc");
    await expectRows(ui, byStatus, "1–32 of 32");
    await ui.audit();

    await ui.page.reload();
    await ui.settled();
    await expectRows(ui, byStatus, "1–32 of 32");
    expect(await ui.page.getByRole("table", { name: "Devices" }).getByRole("columnheader", { name: "Status" }).getAttribute("aria-sort")).toBe("ascending");
  });

  it("filters by status, label selector and search, all in the URL; a reload, or the link opened elsewhere, shows the same view", async () => {
    const ui = await suite.open({ user: ADMIN });
    await ui.goto("/devices");

    await ui.page.getByRole("checkbox", { name: "online" }).check();
    await waitForPath(ui.page, (url) => url.searchParams.get("status") === "online", "status=online");
    await expectRows(ui, await apiNames("limit=50&sort=name&order=asc&status=online"), "1–29 of 29");

    // A selector still being typed (`site=`: the key taken from the suggestions, no value yet) is
    // not applied: the table waits for a value instead of showing "0 matching". (The search typed
    // after it settles after it: once the search is in the URL, the selector had its turn.)
    await ui.page.getByLabel("Label selector").fill("site=");
    await ui.page.getByLabel("Search").fill("munich");
    await waitForPath(ui.page, (url) => url.searchParams.get("q") === "munich", "q=munich");
    expect(searchOf(ui.page).labels).toBeUndefined();
    await expectRows(ui, await apiNames("limit=50&sort=name&order=asc&status=online&search=munich"), "1–9 of 9");
    expect(await ui.page.getByRole("heading", { level: 1 }).locator("xpath=following-sibling::p").textContent()).toBe("9 matching");
    await ui.page.getByLabel("Search").fill("");
    await waitForPath(ui.page, (url) => !url.searchParams.has("q"), "no q");

    await ui.page.getByLabel("Label selector").fill("site=munich");
    await waitForPath(ui.page, (url) => url.searchParams.get("labels") === "site=munich", "labels=site=munich");
    await expectRows(ui, await apiNames("limit=50&sort=name&order=asc&status=online&labels=site%3Dmunich"), "1–9 of 9");

    await ui.page.getByLabel("Search").fill("munich-00001");
    await waitForPath(ui.page, (url) => url.searchParams.get("q") === "munich-00001", "q=munich-00001");
    const view = await apiNames("limit=50&sort=name&order=asc&status=online&labels=site%3Dmunich&search=munich-00001");
    expect(view).toEqual(["munich-000010", "munich-000011", "munich-000012"]);
    await expectRows(ui, view, "1–3 of 3");
    await ui.audit();
    await ui.screenshot("devices-table-filtered");
    const link = ui.page.url();
    expect(searchOf(ui.page)).toEqual({ status: "online", labels: "site=munich", q: "munich-00001" });

    await ui.page.reload();
    await ui.settled();
    await expectRows(ui, view, "1–3 of 3");
    expect(await ui.page.getByRole("checkbox", { name: "online" }).isChecked()).toBe(true);
    expect(await ui.page.getByLabel("Label selector").inputValue()).toBe("site=munich");
    expect(await ui.page.getByLabel("Search").inputValue()).toBe("munich-00001");

    // The link in another browser context (a colleague's) opens the same view.
    const other = await suite.open({ user: ADMIN });
    await other.goto(link.slice(service.url.length));
    await expectRows(other, view, "1–3 of 3");

    // An invalid selector stays in the field with the reason; the URL and the rows keep the last valid one.
    await ui.page.getByLabel("Label selector").fill("site=munich,=x");
    await ui.page.getByText("expected key=value").waitFor();
    expect(searchOf(ui.page).labels).toBe("site=munich");
    await ui.audit();

    await ui.page.getByRole("button", { name: "Clear filters" }).first().click();
    await waitForPath(ui.page, (url) => url.search === "", "no filters");
    await expectRows(ui, await apiNames("limit=50&sort=name&order=asc"), "1–32 of 32");
    expect(await ui.page.getByLabel("Label selector").inputValue()).toBe("");
  });

  it("sets a label on the selected devices, and the API shows it on exactly those", async () => {
    const ui = await suite.open({ user: ADMIN });
    await ui.goto("/devices?labels=site%3Dberlin&limit=25");
    const chosen = berlin.devices.slice(2, 5).map((d) => d.reportedDeviceId);
    for (const name of chosen) await ui.page.getByRole("checkbox", { name: `Select ${name}` }).check();
    const bar = ui.page.getByRole("region", { name: "Selected devices" });
    await waitForText(bar.getByText(/selected$/), "3 selected");
    await bar.getByRole("button", { name: "Set or remove a label" }).click();
    const dialog = ui.page.getByRole("dialog", { name: "Label 3 devices" });
    await dialog.getByLabel("Key").fill("rack");
    await dialog.getByLabel("Value").fill("r7");
    await ui.audit();
    await dialog.getByRole("button", { name: "Set label on 3 devices" }).click();
    await ui.page.getByText("rack=r7 set on 3 devices").waitFor();
    await dialog.waitFor({ state: "hidden" });

    const labelled = await service.call<{ items: { name: string; labels: Record<string, string> }[]; total: number }>("GET", "/api/v1/devices?labels=rack%3Dr7&limit=50&sort=name&order=asc");
    expect(labelled.items.map((d) => d.name)).toEqual(chosen);
    for (const d of labelled.items) expect(d.labels).toEqual({ site: "berlin", rack: "r7" });
    // The table shows the new label on those rows, and the selection is cleared.
    for (const name of chosen) {
      await ui.page.getByRole("row").filter({ has: ui.page.getByRole("link", { name, exact: true }) }).getByText("rack=r7").waitFor();
    }
    expect(await bar.count()).toBe(0);
    await ui.audit();
  });

  it("deletes the selected devices after a confirmation that names how many", async () => {
    const ui = await suite.open({ user: ADMIN });
    await ui.goto("/devices?labels=site%3Dmunich&q=munich-00000");
    const chosen = munich.devices.slice(6, 8);
    for (const device of chosen) await ui.page.getByRole("checkbox", { name: `Select ${device.reportedDeviceId}` }).check();
    await ui.page.getByRole("region", { name: "Selected devices" }).getByRole("button", { name: "Delete" }).click();
    const dialog = ui.page.getByRole("dialog", { name: "Delete 2 devices?" });
    await dialog.getByText("2 devices will be removed from the fleet").waitFor();
    await ui.audit();
    await dialog.getByRole("button", { name: "Delete 2 devices" }).click();
    await ui.page.getByText("2 devices deleted, 2 certificates revoked").waitFor();
    for (const device of chosen) {
      expect((await service.api("GET", `/api/v1/devices/${device.deviceId}`)).status).toBe(404);
      await ui.page.getByRole("link", { name: device.reportedDeviceId, exact: true }).waitFor({ state: "detached" });
    }
    await ui.audit();
  });
});
