// The "config source failing" condition in Chromium (issue 33): the rule form offers it, hides
// the label selector and offers the organization's config sources instead; a source on a
// loopback Git server whose branch gets a bad document is refused, the service's own
// evaluation schedule fires the rule, and the alerts page shows the source (linked to its page)
// as the alert's subject; acknowledging it in the browser is stored as the API then answers.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { peerAvailable } from "../../support/peers.js";
import { ADMIN, type ConsoleService } from "../../support/console-service.js";
import { consoleSuite, waitForPath } from "../../support/browser.js";
import { startGitServer, type GitServer } from "../../support/git-server/index.js";

const ROLE = "apiVersion: fleet.app/v1\nkind: Role\nmetadata: { name: readers }\nspec:\n  permissions: [devices:read]\n";
const BAD = "apiVersion: fleet.app/v1\nkind: AlertRule\nmetadata: { name: broken }\nspec:\n  condition: { type: no_such_condition }\n";

interface ApiAlert { ruleId: string; subjectType: string; subjectId: string; subjectName: string | null; acknowledgedBy: string | null }

let git: GitServer;

describe.skipIf(!peerAvailable("chromium"))("console: config source failing alerts", () => {
  const suite = consoleSuite({ ALERT_EVALUATION_INTERVAL_SECONDS: "5" });
  let service: ConsoleService;
  let sourceId = "";

  beforeAll(async () => {
    service = suite.service;
    git = await startGitServer();
    const { url } = await git.createRepo("site-config", { "fleet/roles.yaml": ROLE });
    const sources = `/api/v1/organizations/${service.defaultOrg.id}/config/sources`;
    sourceId = (await service.call("POST", sources, { body: { name: "site-config", url, branch: "main", path: "fleet", pollIntervalSeconds: 0 } })).id;
    expect((await service.call("POST", `${sources}/${sourceId}/sync`)).status).toBe("applied");
  }, 60_000);
  afterAll(async () => {
    await git?.close();
  });

  it("creates the rule with the form, and the alerts page shows the failing source as the alert's subject", async () => {
    const ui = await suite.open({ user: ADMIN });
    await ui.goto("/alerts/rules/new");
    const form = ui.page.locator("form.rule-form");
    await form.getByLabel("Name", { exact: true }).fill("Config not applying");
    // the label selector is offered for device conditions, not for this one
    await expect.poll(() => form.getByLabel("Devices whose labels match").count()).toBe(1);
    await form.getByLabel("Condition type").selectOption({ label: "Config source failing" });
    await expect.poll(() => form.getByLabel("Devices whose labels match").count()).toBe(0);
    await form.getByLabel("Failed syncs in a row").fill("1");
    const watched = form.getByRole("group", { name: "Config sources watched" });
    await watched.getByText("None picked: every config source").waitFor();
    await watched.getByRole("checkbox", { name: "site-config" }).check();
    await ui.audit();
    await ui.screenshot("alerts-rule-config-source");
    await form.getByRole("button", { name: "Create rule" }).click();
    await waitForPath(ui.page, (u) => u.pathname === "/alerts/rules", "the rules page");

    const rules = (await service.call<{ items: { id: string; name: string; condition: unknown; labelSelector: unknown; summary: string }[] }>("GET", "/api/v1/alert-rules")).items;
    const rule = rules.find((r) => r.name === "Config not applying")!;
    expect(rule).toMatchObject({
      condition: { type: "config_source_failing", consecutiveFailures: 1, sourceNames: ["site-config"] }, labelSelector: {},
      summary: "config source failing (last sync refused or failed): site-config",
    });
    await ui.page.getByRole("row").filter({ hasText: "Config not applying" }).getByText("config source failing").first().waitFor();
    await ui.audit();

    // a bad document: the sync is refused; the service's evaluation schedule fires the rule
    await git.commit("site-config", { "fleet/bad.yaml": BAD });
    const refused = await service.call("POST", `/api/v1/organizations/${service.defaultOrg.id}/config/sources/${sourceId}/sync`);
    expect(refused.status).toBe("refused");

    await ui.goto("/alerts");
    const row = ui.page.getByRole("row").filter({ hasText: "Config not applying" });
    const link = row.getByRole("link", { name: "site-config" });
    await link.waitFor({ timeout: 30_000 });
    expect(await link.getAttribute("href")).toBe(`/config/sources/${sourceId}`);
    expect(await row.textContent()).toContain("config source");
    await ui.audit();
    await ui.screenshot("alerts-config-source-firing");

    await row.getByRole("button", { name: "Acknowledge Config not applying on site-config" }).click();
    await row.getByText(ADMIN.email).waitFor();
    const [alert] = (await service.call<{ items: ApiAlert[] }>("GET", `/api/v1/alerts?ruleId=${rule.id}`)).items;
    expect(alert).toMatchObject({ subjectType: "config_source", subjectId: sourceId, subjectName: "site-config", acknowledgedBy: ADMIN.email });

    await link.click();
    await waitForPath(ui.page, (u) => u.pathname === `/config/sources/${sourceId}`, "the source's page");
    await ui.page.getByText("fleet/bad.yaml").first().waitFor();
    await ui.audit();
  }, 120_000);
});
