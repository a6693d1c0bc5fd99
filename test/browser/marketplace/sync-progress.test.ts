// The marketplace store from the browser, against Debian's docker-registry on loopback: set up,
// synced with a live progress bar fed by the progress stream (a gated proxy holds one
// repository's reads, so the bar is seen part-way, then full), and the sync history showing the
// run's per-product breakdown with the skip reason, equal to the API's.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { peerAvailable } from "../../support/peers.js";
import { ADMIN, type ConsoleService } from "../../support/console-service.js";
import { consoleSuite, waitForPath } from "../../support/browser.js";
import { startOciRegistry, type OciRegistryServer } from "../../support/oci-registry.js";
import { gatedProxy, type GatedProxy } from "../../support/gated-proxy.js";
import { appYaml } from "../../http/registries-git/support.js";

let registry: OciRegistryServer;
let proxy: GatedProxy;

describe.skipIf(!peerAvailable("chromium") || !peerAvailable("docker-registry"))("console marketplace sync", () => {
  const suite = consoleSuite();
  let service: ConsoleService;

  beforeAll(async () => {
    service = suite.service;
    registry = await startOciRegistry();
    await registry.pushPackage("edge/vision", "1.0.0", appYaml("vision", "1.0.0", { name: "Vision" }));
    await registry.pushPackage("edge/metrics", "2.1.0", appYaml("metrics", "2.1.0", { name: "Metrics" }));
    await registry.pushImage("edge/plain", "latest");
    // The second repository's reads wait until the test opens the gate.
    proxy = await gatedProxy(registry.url, (req) => (req.url ?? "").startsWith("/v2/edge/metrics/"));
    await service.call("POST", "/api/v1/registries/oci", { body: { name: "Edge packages", url: proxy.url, repositories: ["edge/vision", "edge/metrics", "edge/plain"] } });
  }, 60_000);
  afterAll(async () => {
    await proxy?.close();
    await registry?.close();
  });

  it("sets up the store, shows the sync moving live, then the run's per-product breakdown", async () => {
    const ui = await suite.open({ user: ADMIN });
    ui.expectStatus(404, "marketplaceStore.get");
    await ui.goto("/marketplace");
    await ui.page.getByText("No marketplace store yet").waitFor();
    await ui.screenshot("marketplace-no-store");
    await ui.page.getByRole("button", { name: "Set up the store" }).click();
    await ui.page.getByText("Marketplace store set up").waitFor();
    const store = await service.call("GET", "/api/v1/marketplace-store");
    expect(store).toMatchObject({ enabled: true, syncIntervalMinutes: 60, includeAllGlobalRegistries: false, globalRegistryIds: [] });
    const sources = ui.page.getByRole("table", { name: "Registries the store reads, in order" });
    await sources.getByRole("row").filter({ hasText: "Edge packages" }).waitFor();
    await ui.page.getByRole("region", { name: "Sync history" }).getByText("No syncs yet").waitFor();
    const bar = ui.page.getByRole("progressbar", { name: "Marketplace sync progress" });
    await expect.poll(() => bar.getAttribute("aria-valuetext")).toBe("No sync running");
    await ui.settled();
    await ui.audit();

    // Sync now: the first repository is read, the second is held: the bar stands at 1 of 3.
    await ui.page.getByRole("button", { name: "Sync now" }).click();
    // The first repository's end (1 of 3, still naming edge/vision) and the start of edge/metrics
    // are two steps of the stream, each shown as it arrives: wait for the second.
    await expect.poll(() => bar.getAttribute("aria-valuetext"), { timeout: 30_000 }).toMatch(/^1 of 3 repositories read · reading Edge packages edge\/metrics; \d+ tags? read, 1 found, 0 skipped$/);
    expect(await bar.getAttribute("aria-valuenow")).toBe("1");
    expect(await bar.getAttribute("aria-valuemax")).toBe("3");
    const live = await service.call("GET", "/api/v1/marketplace-store/sync/progress");
    // (The stored snapshot is written when a repository ends; the stream above also carried the step that started edge/metrics.)
    expect(live).toMatchObject({ state: "running", repositoriesDone: 1, repositoriesTotal: 3 });
    expect(await ui.page.getByRole("button", { name: "Sync now" }).isDisabled()).toBe(true);
    await ui.audit();
    await ui.screenshot("marketplace-sync-progress");

    // Released: the bar fills, and the run's record arrives in the history without a reload.
    proxy.open();
    await expect.poll(() => bar.getAttribute("aria-valuetext"), { timeout: 30_000 }).toMatch(/^Finished: 3 repositories read, 2 imported, 0 updated, 1 skipped, 0 errors$/);
    expect([await bar.getAttribute("aria-valuenow"), await bar.getAttribute("aria-valuemax")]).toEqual(["3", "3"]);
    const history = await service.call("GET", "/api/v1/marketplace-store/sync-history?limit=10&offset=0");
    expect(history.total).toBe(1);
    const [run] = history.data;
    expect(run).toMatchObject({ status: "success", repositoriesFound: 3, applicationsImported: 2 });

    const products = ui.page.getByRole("table", { name: /^Products of the run of / });
    await products.waitFor();
    const rows = await products.getByRole("row").evaluateAll((trs) => trs.slice(1).map((tr) => Array.from((tr as unknown as { cells: ArrayLike<{ textContent: string | null }> }).cells, (td) => td.textContent ?? "")));
    const fromApi = run.products.map((p: { registryName: string; repository: string; tag: string; outcome: string; application?: string; version?: string; reason?: string }) =>
      [p.registryName, `${p.repository}:${p.tag}`, p.outcome, p.application ? `${p.application} ${p.version}` : "none", p.reason ?? "none"]);
    expect(rows).toEqual(fromApi);
    expect(rows.map((r: string[]) => `${r[1]} ${r[2]}`).sort()).toEqual(["edge/metrics:2.1.0 imported", "edge/plain:latest skipped", "edge/vision:1.0.0 imported"]);
    expect(rows.find((r: string[]) => r[2] === "skipped")![4]).not.toBe("none");
    await ui.page.getByText("3 repositories, 2 packages found: 2 imported, 0 updated, 0 unchanged, 1 skipped.").waitFor();
    await ui.settled();
    await ui.audit();
    await ui.screenshot("marketplace-sync-history");

    // The imported applications are in the catalog.
    await ui.page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Applications" }).click();
    await waitForPath(ui.page, (url) => url.pathname === "/applications", "the catalog");
    const catalog = ui.page.getByRole("table", { name: "Applications" });
    await catalog.getByRole("link", { name: "Metrics" }).waitFor();
    await catalog.getByRole("link", { name: "Vision" }).waitFor();
    await ui.settled();
    await ui.audit();

    // The three catalog pages in the dark theme: axe-clean there too.
    const dark = await suite.open({ user: ADMIN, colorScheme: "dark" });
    for (const [path, ready] of [["/applications", "Metrics"], ["/registries", "Edge packages"], ["/marketplace", "Finished: 3 repositories read"]] as const) {
      await dark.goto(path);
      await dark.page.getByText(ready).first().waitFor();
      expect(await dark.page.evaluate(() => (globalThis as unknown as { document: { documentElement: { dataset: Record<string, string> } } }).document.documentElement.dataset.theme)).toBe("dark");
      await dark.audit();
    }
    await dark.screenshot("marketplace-dark");
  });
});
