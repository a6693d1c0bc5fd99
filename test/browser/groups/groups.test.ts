// Groups in Chromium: a label key's values with their counts and status breakdowns are the
// API's (op 14), a selector typed in is evaluated as the API evaluates it (op 12), both live
// in the URL, and the link to the matching devices opens the device table filtered by it.
import { beforeAll, describe, expect, it } from "vitest";
import { peerAvailable } from "../../support/peers.js";
import { ADMIN, type ConsoleService } from "../../support/console-service.js";
import { consoleSuite, waitForPath, waitForText } from "../../support/browser.js";

let service: ConsoleService;

const STATUS_COLUMNS = ["online", "offline", "error", "pending", "provisioned"] as const;

describe.skipIf(!peerAvailable("chromium"))("console groups", () => {
  const suite = consoleSuite();

  beforeAll(async () => {
    service = suite.service;
    const berlin = await service.enrollFleet({ prefix: "berlin-edge", devices: 5, labels: { site: "berlin", tier: "edge" } });
    await service.enrollFleet({ prefix: "berlin-core", devices: 2, labels: { site: "berlin", tier: "core" } });
    await service.enrollFleet({ prefix: "paris", devices: 3, labels: { site: "paris", tier: "edge" }, heartbeat: false });
    await service.enrollFleet({ prefix: "rack", devices: 1, labels: { rack: "r1" }, heartbeat: false });
    berlin.devices[0].failing = true;
    await berlin.heartbeat([berlin.devices[0]]);
  });


  it("shows a label key's values with the API's counts and status breakdowns", async () => {
    const ui = await suite.open({ user: ADMIN });
    await ui.goto("/groups?key=site");
    const api = await service.call<{ total: number; groups: { value: string; count: number; byStatus: Record<string, number> }[] }>("GET", "/api/v1/groups/by-label/site");
    const values = ui.page.getByRole("region", { name: "Values of site" });
    await waitForText(values.getByText(/devices carry site/), `${api.total} devices carry site, in ${api.groups.length} groups.`);
    const table = values.getByRole("table", { name: "Values of site" });
    for (const group of api.groups) {
      const row = table.getByRole("row").filter({ has: ui.page.getByRole("cell", { name: group.value, exact: true }) });
      const cells = (await row.getByRole("cell").allTextContents()).map((t) => t.trim());
      expect(cells.slice(0, 7)).toEqual([group.value, String(group.count), ...STATUS_COLUMNS.map((s) => String(group.byStatus[s]))]);
    }
    expect(await table.locator("tbody tr").count()).toBe(api.groups.length);
    await ui.screenshot("groups");

    // Another key from the list: its values, the key in the URL.
    await ui.page.getByRole("list", { name: "Label keys" }).getByRole("link", { name: /^tier/ }).click();
    await waitForPath(ui.page, (url) => url.searchParams.get("key") === "tier", "key=tier");
    const tier = await service.call<{ groups: { value: string; count: number }[] }>("GET", "/api/v1/groups/by-label/tier");
    const tierTable = ui.page.getByRole("table", { name: "Values of tier" });
    for (const group of tier.groups) {
      await waitForText(tierTable.getByRole("row").filter({ has: ui.page.getByRole("cell", { name: group.value, exact: true }) }).getByRole("cell").nth(1), String(group.count));
    }
    await ui.audit();
  });

  it("counts one of a thing in the singular: 1 value, 1 device, 1 group (src/lib/plural.ts)", async () => {
    const ui = await suite.open({ user: ADMIN });
    await ui.goto("/groups?key=rack");
    const key = ui.page.getByRole("list", { name: "Label keys" }).getByRole("link", { name: /^rack/ });
    await waitForText(key.locator(".faint"), "1 value · 1 device");
    const values = ui.page.getByRole("region", { name: "Values of rack" });
    await waitForText(values.getByText(/carries rack/), "1 device carries rack, in 1 group.");
    await ui.audit();
  });

  it("evaluates a typed selector as the API does, keeps it in the URL, and links to the matching devices", async () => {
    const ui = await suite.open({ user: ADMIN });
    await ui.goto("/groups");
    const card = ui.page.getByRole("region", { name: "Evaluate a selector" });
    await card.getByLabel("Label selector (empty: every device)").fill("site=berlin,tier=edge");
    await waitForPath(ui.page, (url) => url.searchParams.get("selector") === "site=berlin,tier=edge", "the selector in the URL");
    const api = await service.call<{ total: number; byStatus: Record<string, number> }>("POST", "/api/v1/groups/query", { body: { labelSelector: { site: "berlin", tier: "edge" } } });
    expect(api.total).toBe(5);
    const summary = `Matching devices by status: ${STATUS_COLUMNS.map((s) => `${s[0].toUpperCase()}${s.slice(1)} ${api.byStatus[s]}`).join(", ")}`;
    await card.getByRole("img", { name: summary }).waitFor();
    await ui.audit();

    await ui.page.reload();
    await ui.settled();
    expect(await card.getByLabel("Label selector (empty: every device)").inputValue()).toBe("site=berlin,tier=edge");
    await card.getByRole("img", { name: summary }).waitFor();

    await card.getByRole("link", { name: `Show these ${api.total} devices` }).click();
    const url = await waitForPath(ui.page, (u) => u.pathname === "/devices", "the device table");
    expect(url.searchParams.get("labels")).toBe("site=berlin,tier=edge");
    await ui.settled();
    await waitForText(ui.page.getByRole("navigation", { name: "Device pages" }).locator("span").first(), `1–${api.total} of ${api.total}`);
    await ui.audit();
  });
});
