// "Sync now" applies the commit the person reviewed (issue 33): a push lands on the branch
// between the plan and the confirmation; Apply answers that the branch moved (naming both
// commits) and nothing is applied; "Plan again" shows the new commit's plan, which then applies.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { peerAvailable } from "../../support/peers.js";
import { ADMIN, type ConsoleService } from "../../support/console-service.js";
import { consoleSuite, waitForText } from "../../support/browser.js";
import { startGitServer, type GitServer } from "../../support/git-server/index.js";

const role = (permissions: string[]) => `apiVersion: fleet.app/v1\nkind: Role\nmetadata: { name: shift-leads }\nspec:\n  permissions: [${permissions.join(", ")}]\n`;

let git: GitServer;

describe.skipIf(!peerAvailable("chromium"))("console: sync now when the branch moved after the plan", () => {
  const suite = consoleSuite();
  let service: ConsoleService;
  let first = "";

  beforeAll(async () => {
    service = suite.service;
    git = await startGitServer();
    const repo = await git.createRepo("moving", { "roles.yaml": role(["devices:read"]) });
    first = repo.commit;
    await service.call("POST", `/api/v1/organizations/${service.defaultOrg.id}/config/sources`, {
      body: { name: "moving", url: repo.url, branch: "main", path: "/", pollIntervalSeconds: 0 },
    });
  }, 60_000);
  afterAll(async () => {
    await git?.close();
  });

  it("applies nothing when the branch moved, says so, and applies the new plan after Plan again", async () => {
    const ui = await suite.open({ user: ADMIN });
    await ui.goto("/config");
    const row = ui.page.getByRole("row").filter({ hasText: "source:moving" });
    await row.getByRole("button", { name: "Sync now moving" }).click();
    const dialog = ui.page.getByRole("dialog", { name: "Sync “moving”" });
    await waitForText(dialog.getByTestId("plan-summary"), (t) => t.includes("1 create"));

    // someone pushes while the person reads the plan
    const { commit: second } = await git.commit("moving", { "roles.yaml": role(["devices:read", "alerts:read"]) });
    ui.expectStatus(409, "config.sourcesSync");
    await dialog.getByRole("button", { name: `Apply ${first.slice(0, 7)}` }).click();
    await dialog.getByText(`moved from ${first.slice(0, 12)} to ${second.slice(0, 12)}`).waitFor();
    await ui.audit();
    await ui.screenshot("config-sync-moved");
    const roles = await service.call<{ items: { name: string }[] }>("GET", "/api/v1/roles?limit=200");
    expect(roles.items.some((r) => r.name === "shift-leads")).toBe(false);

    await dialog.getByRole("button", { name: "Plan again" }).click();
    await dialog.getByRole("button", { name: `Apply ${second.slice(0, 7)}` }).click();
    await waitForText(dialog.getByTestId("sync-outcome"), (t) => t.startsWith("Applied"));
    const source = await service.call("GET", `/api/v1/organizations/${service.defaultOrg.id}/config/sources`);
    expect(source.items[0]).toMatchObject({ name: "moving", lastAppliedCommit: second, lastSyncStatus: "applied" });
  }, 120_000);
});
