// Fleet as code from the browser (docs/config-as-code.md, "In the console"), against a real Git
// server on loopback: a config source is added on the Configuration page; "Sync now" shows the
// plan's diff first (create, then after a push an update with the changed field old → new) and
// applies only when confirmed; the resources appear in their own lists with the owner mark
// (source and short commit) and without edit or delete controls, while a resource made by hand
// keeps them; a managed webhook's URL (never in Git) is set from its list; a viewer reads, no controls; the source's page shows its resources and its sync history; allow prune once;
// deleting the source (confirmed) releases its resources, which can be edited again.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { peerAvailable } from "../../support/peers.js";
import { ADMIN, type ConsoleService } from "../../support/console-service.js";
import { consoleSuite, waitForPath, waitForText } from "../../support/browser.js";
import { startGitServer, type GitServer } from "../../support/git-server/index.js";

const alerting = (durationSeconds: number) => `apiVersion: fleet.app/v1
kind: NotificationTarget
metadata: { name: ops-mail }
spec: { type: email, recipients: [ops@example.test] }
---
apiVersion: fleet.app/v1
kind: NotificationTarget
metadata: { name: ops-hook }
spec: { type: webhook }
---
apiVersion: fleet.app/v1
kind: AlertRule
metadata: { name: offline-berlin }
spec:
  severity: critical
  labelSelector: { site: berlin }
  condition: { type: device_offline, durationSeconds: ${durationSeconds} }
  targetIds: [ops-mail]
`;
const PLATFORM = `apiVersion: fleet.app/v1
kind: Role
metadata: { name: deployers }
spec: { description: ships releases, permissions: [deployments:read, deployments:write] }
---
apiVersion: fleet.app/v1
kind: GitRegistry
metadata: { name: app-repo }
spec: { url: https://git.example.test/apps.git, branch: main, syncIntervalMinutes: 0 }
`;

let git: GitServer;
let repoUrl: string;
let first: string;

describe.skipIf(!peerAvailable("chromium"))("console Configuration", () => {
  const suite = consoleSuite({ SMTP_URL: "smtp://127.0.0.1:2525" }); // e-mail targets need one configured; nothing is sent
  let service: ConsoleService;

  beforeAll(async () => {
    service = suite.service;
    git = await startGitServer();
    ({ url: repoUrl, commit: first } = await git.createRepo("fleet-config", {
      "fleet/alerting.yaml": alerting(600),
      "fleet/platform.yaml": PLATFORM,
      "README.md": "# not read\n",
    }));
    // made by hand: keeps its controls
    await service.call("POST", "/api/v1/alert-rules", { body: { name: "by-hand", condition: { type: "deployment_failed" } } });
  }, 60_000);
  afterAll(async () => {
    await git?.close();
  });

  it("adds a source, shows the plan before a sync applies it, marks what it applied in every list and keeps its history", async () => {
    const ui = await suite.open({ user: ADMIN });
    await ui.goto("/config");
    await ui.page.getByRole("navigation").getByRole("link", { name: "Configuration", exact: true }).waitFor();
    await ui.page.getByText("No config sources yet").waitFor();

    await ui.page.getByRole("button", { name: "Add config source" }).first().click();
    const add = ui.page.getByRole("dialog", { name: "Add a config source" });
    await add.getByLabel("Name", { exact: true }).fill("main");
    await add.getByLabel("Repository URL").fill(repoUrl);
    await add.getByLabel("Folder").fill("fleet");
    await add.getByLabel("Poll interval (seconds)").fill("0"); // sync now only: the plan comes first
    await add.getByLabel("Prune: delete what the source applied and Git no longer holds").check();
    await ui.audit();
    await add.getByRole("button", { name: "Add config source" }).click();
    await ui.page.getByText("Config source “main” added: sync it to apply its documents").waitFor();
    const [source] = (await service.call("GET", `/api/v1/organizations/${service.defaultOrg.id}/config/sources`)).items;
    expect(source).toMatchObject({ name: "main", url: repoUrl, branch: "main", path: "/fleet", prune: true, pollIntervalSeconds: 0, lastSyncStatus: null });
    const row = ui.page.getByRole("row").filter({ hasText: "source:main" });
    await row.getByText("never synced").waitFor();

    // Sync now: the plan first, nothing written until the person confirms.
    await row.getByRole("button", { name: "Sync now main" }).click();
    let dialog = ui.page.getByRole("dialog", { name: "Sync “main”" });
    await waitForText(dialog.getByTestId("plan-summary"), (t) => t.includes("5 create"));
    const planned = dialog.getByRole("table", { name: "Planned changes" });
    for (const name of ["ops-mail", "ops-hook", "offline-berlin", "deployers", "app-repo"]) await planned.getByRole("row").filter({ hasText: name }).filter({ hasText: "create" }).waitFor();
    expect(await service.call("GET", "/api/v1/roles?limit=200").then((r) => r.items.some((x: { name: string }) => x.name === "deployers"))).toBe(false);
    await ui.audit();
    await ui.screenshot("config-plan-create");
    await dialog.getByRole("button", { name: `Apply ${first.slice(0, 7)}` }).click();
    await waitForText(dialog.getByTestId("sync-outcome"), (t) => t.startsWith("Applied"));
    await dialog.getByRole("button", { name: "Close" }).click();
    await waitForText(row.getByRole("cell").nth(2), (t) => t.startsWith(first.slice(0, 7)));

    // A push changes the rule: the plan names the field, old and new.
    const { commit: second } = await git.commit("fleet-config", { "fleet/alerting.yaml": alerting(900) });
    await row.getByRole("button", { name: "Sync now main" }).click();
    dialog = ui.page.getByRole("dialog", { name: "Sync “main”" });
    await waitForText(dialog.getByTestId("plan-summary"), (t) => t.includes("1 update") && t.includes("4 unchanged"));
    const update = dialog.getByRole("table", { name: "Planned changes" }).getByRole("row").filter({ hasText: "offline-berlin" });
    await waitForText(update.getByRole("cell").nth(2), (t) => t.includes("condition") && t.includes("600") && t.includes("900"));
    await ui.screenshot("config-plan-update");
    await dialog.getByRole("button", { name: `Apply ${second.slice(0, 7)}` }).click();
    await waitForText(dialog.getByTestId("sync-outcome"), (t) => t.startsWith("Applied"));
    await dialog.getByRole("button", { name: "Close" }).click();
    await ui.screenshot("config-sources");

    // Allow prune once: the source says so until a sync spends it.
    await row.getByRole("button", { name: "Allow prune once for main" }).click();
    await row.getByRole("button", { name: "Prune allowed once for main" }).waitFor();
    expect((await service.call("GET", `/api/v1/organizations/${service.defaultOrg.id}/config/sources/${source.id}`)).pruneAllowedOnce).toBe(true);

    // The lists: the owner mark with the short commit, and no edit or delete for a managed row.
    const mark = `main @ ${second.slice(0, 7)}`;
    await ui.goto("/alerts/rules");
    const managedRule = ui.page.getByRole("row").filter({ hasText: "offline-berlin" });
    await waitForText(managedRule.getByTestId("managed-mark"), (t) => t.includes(mark));
    expect(await managedRule.getByRole("button").count()).toBe(0);
    expect(await managedRule.getByRole("link", { name: "Edit offline-berlin" }).count()).toBe(0);
    const byHand = ui.page.getByRole("row").filter({ hasText: "by-hand" });
    await byHand.getByRole("link", { name: "Edit by-hand" }).waitFor();
    expect(await byHand.getByTestId("managed-mark").count()).toBe(0);
    await ui.screenshot("config-alert-rules-marked");

    await ui.goto("/notification-targets");
    const target = ui.page.getByRole("row").filter({ hasText: "ops-mail" });
    await waitForText(target.getByTestId("managed-mark"), (t) => t.includes(mark));
    expect(await target.getByRole("button", { name: "Edit ops-mail" }).count()).toBe(0);
    expect(await target.getByRole("button", { name: "Delete ops-mail" }).count()).toBe(0);
    // A webhook's URL is never in Git: the target waits for it, and setting only it stays open.
    const hook = ui.page.getByRole("row").filter({ hasText: "ops-hook" });
    expect(await hook.getByRole("button", { name: "Edit ops-hook" }).count()).toBe(0);
    const waiting = (await service.call("GET", `/api/v1/organizations/${service.defaultOrg.id}/config/sources/${source.id}/resources`)).items.find((r: { name: string }) => r.name === "ops-hook");
    expect(waiting).toMatchObject({ status: "pending secret", pendingSecrets: ["url"] });
    await ui.screenshot("config-targets-marked");
    await hook.getByRole("button", { name: "Set URL of ops-hook" }).click();
    const secrets = ui.page.getByRole("dialog", { name: "URL and secret of “ops-hook”" });
    await secrets.getByLabel("URL").fill("https://hooks.example.test/ops");
    await ui.audit();
    await secrets.getByRole("button", { name: "Save" }).click();
    await ui.page.getByText("Notification target “ops-hook” saved").waitFor();
    const stored = (await service.call("GET", "/api/v1/notification-targets?limit=200")).items.find((t: { name: string }) => t.name === "ops-hook");
    expect(stored).toMatchObject({ url: "https://hooks.example.test/ops", managedBy: "source:main" });

    await ui.goto("/members/roles");
    const role = ui.page.getByRole("row").filter({ hasText: "deployers" });
    await waitForText(role.getByTestId("managed-mark"), (t) => t.includes(mark));
    expect(await role.getByRole("button").count()).toBe(0);

    await ui.goto("/registries");
    const registry = ui.page.getByRole("region", { name: "Git registries" }).getByRole("row").filter({ hasText: "app-repo" });
    await waitForText(registry.getByTestId("managed-mark"), (t) => t.includes(mark));
    expect(await registry.getByRole("button", { name: "Edit app-repo" }).count()).toBe(0);
    expect(await registry.getByRole("button", { name: "Delete app-repo" }).count()).toBe(0);
    await registry.getByRole("button", { name: "Sync now app-repo" }).waitFor(); // syncing a registry stays open
    await ui.screenshot("config-registries-marked");

    // The source's page: its resources and its history, newest first.
    await ui.goto("/config");
    await ui.page.getByRole("link", { name: "main" }).click();
    await waitForPath(ui.page, (u) => u.pathname === `/config/sources/${source.id}`, "the source's page");
    await ui.settled();
    const history = ui.page.getByRole("table", { name: "Sync history" }).getByRole("row");
    await waitForText(history.nth(1), (t) => t.includes("applied") && t.includes(second.slice(0, 7)) && t.includes("1 updated") && t.includes(ADMIN.email));
    await waitForText(history.nth(2), (t) => t.includes("applied") && t.includes(first.slice(0, 7)) && t.includes("5 created"));
    const resources = ui.page.getByRole("table", { name: "Resources of the source" });
    await waitForText(resources.getByRole("row").filter({ hasText: "offline-berlin" }), (t) => t.includes("in sync"));
    await waitForText(resources.getByRole("row").filter({ hasText: "ops-hook" }), (t) => t.includes("in sync")); // its URL is set
    await ui.audit();
    await ui.screenshot("config-source-page");

    // A viewer reads the sources and the marks, and is offered nothing that changes them.
    const viewer = await suite.open({ user: await service.createUser("viewer", { name: "Vera Viewer" }) });
    await viewer.goto("/config");
    const seen = viewer.page.getByRole("row").filter({ hasText: "source:main" });
    await waitForText(seen.getByRole("cell").nth(2), (t) => t.startsWith(second.slice(0, 7)));
    expect(await viewer.page.getByRole("button").filter({ hasText: /Add config source|Sync now|Allow prune|Delete/ }).count()).toBe(0);
    expect(await seen.getByRole("button").count()).toBe(0);

    // Delete, confirmed: the resources stay, released, and can be edited again.
    await ui.page.getByRole("button", { name: "Delete main" }).click();
    const confirm = ui.page.getByRole("dialog", { name: "Delete the config source “main”?" });
    await confirm.getByRole("button", { name: "Delete source" }).click();
    await ui.page.getByText("Config source “main” deleted; 5 resources released").waitFor();
    await waitForPath(ui.page, (u) => u.pathname === "/config", "the Configuration page");
    await ui.goto("/alerts/rules");
    await ui.page.getByRole("row").filter({ hasText: "offline-berlin" }).getByRole("link", { name: "Edit offline-berlin" }).waitFor();
  });
});
