// A Git registry from the browser, against a real Git server (smart HTTP on loopback): created
// with a token credential that is never shown again, synced, the sync result object shown
// (counts, commit, a rejected manifest with its path and reason); the imported application is
// in the catalog (icon, tags, filters in the URL) and its page shows its versions newest first
// with release notes, profiles, parameters and provenance; deleting it is refused with the
// API's reason while a deployment uses it.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { peerAvailable } from "../../support/peers.js";
import { ADMIN, type ConsoleService } from "../../support/console-service.js";
import { consoleSuite, waitForPath, waitForText } from "../../support/browser.js";
import { startGitServer, type GitServer } from "../../support/git-server/index.js";
import { appYaml, PNG } from "../../http/registries-git/support.js";

const TOKEN = "git-read-token-" + "x7".repeat(10);

const PARAMETERS = {
  pollSeconds: {
    value: 30, description: "how often the gateway polls", schema: { type: "integer", minimum: 5, maximum: 3600 },
    targets: [{ pointer: "POLL_SECONDS", components: ["app"] }],
  },
  logLevel: { value: "info", schema: { enum: ["debug", "info", "warn"] }, targets: [{ pointer: "LOG_LEVEL", components: ["app"] }] },
  apiToken: { secret: true, required: true, schema: { type: "string", maxLength: 100, pattern: "^tok-" }, targets: [{ pointer: "API_TOKEN", components: ["app"] }] },
};
const PROFILE = {
  id: "compose-main", type: "compose", description: "the gateway",
  components: [{ name: "app", properties: { repository: "oci://registry.example/gateway", revision: "2.0.0" } }],
  requiredResources: { cpu: { cores: 2, architectures: ["arm64", "amd64"] }, memory: "512Mi" },
};

let git: GitServer;
let repoUrl: string;
let commit: string;

describe.skipIf(!peerAvailable("chromium"))("console Git registry", () => {
  const suite = consoleSuite();
  let service: ConsoleService;

  beforeAll(async () => {
    service = suite.service;
    git = await startGitServer();
    ({ url: repoUrl, commit } = await git.createRepo("catalog", {
      "apps/gateway/v1/app.yaml": appYaml("vision-gateway", "1.0.0", { name: "Vision Gateway", description: "First release", tags: ["camera", "edge"], profiles: [PROFILE] }),
      "apps/gateway/v2/app.yaml": appYaml("vision-gateway", "2.0.0", {
        name: "Vision Gateway", description: "Second release: faster polling", tags: ["camera", "edge"], icon: "icon.png", profiles: [PROFILE], parameters: PARAMETERS,
      }),
      "apps/gateway/v2/icon.png": PNG,
      "apps/other/app.yaml": appYaml("plain-tool", "0.1.0", { name: "Plain Tool", tags: ["tools"] }),
      "apps/broken/app.yaml": appYaml("broken-app", "1.0.0", { profiles: [] }),
    }));
  }, 60_000);
  afterAll(async () => {
    await git?.close();
  });

  it("creates, syncs and shows the result; the catalog and the application page show what was imported; delete is refused while deployed", async () => {
    const ui = await suite.open({ user: ADMIN });
    service.rememberSecret(TOKEN);
    await ui.goto("/registries");
    const gitCard = ui.page.getByRole("region", { name: "Git registries" });
    await gitCard.getByText("No Git registries").waitFor();
    await ui.screenshot("registries-empty");

    // Create, with a token the form never shows again.
    await gitCard.getByRole("button", { name: "Add Git registry" }).click();
    const dialog = ui.page.getByRole("dialog", { name: "Add a Git registry" });
    await dialog.getByLabel("Name").fill("Catalog repo");
    await dialog.getByLabel("URL").fill("ftp://nowhere");
    await dialog.getByLabel("Branch").click();
    await dialog.getByText("Give an http:// or https:// URL.").waitFor();
    expect(await dialog.getByRole("button", { name: "Add Git registry" }).isDisabled()).toBe(true);
    await dialog.getByLabel("URL").fill(repoUrl);
    await dialog.getByLabel("Path").fill("apps");
    await dialog.getByLabel("Authentication").selectOption("TOKEN");
    await dialog.getByLabel("Token").fill(TOKEN);
    await ui.audit();
    await dialog.getByRole("button", { name: "Add Git registry" }).click();
    await ui.page.getByText("Git registry “Catalog repo” added").waitFor();
    const [stored] = (await service.call("GET", "/api/v1/registries/git")).items;
    expect(stored).toMatchObject({ name: "Catalog repo", url: repoUrl, branch: "main", path: "/apps", authType: "TOKEN", hasCredentials: true, enabled: true });
    const row = gitCard.getByRole("row").filter({ hasText: "Catalog repo" });
    await waitForText(row.getByRole("cell").nth(2), "token (stored)");
    expect(await ui.page.content()).not.toContain(TOKEN);

    // Edit: the credential field starts empty and saving keeps the stored one.
    await row.getByRole("button", { name: "Edit Catalog repo" }).click();
    const edit = ui.page.getByRole("dialog", { name: "Edit Git registry “Catalog repo”" });
    expect(await edit.getByLabel("Token").inputValue()).toBe("");
    await edit.getByText("Leave empty to keep the stored one.").waitFor();
    await edit.getByLabel("Sync interval (minutes)").fill("0");
    await edit.getByRole("button", { name: "Save" }).click();
    await ui.page.getByText("Git registry “Catalog repo” saved").waitFor();
    await waitForText(row.getByRole("cell").nth(4), "manual only");
    expect(await service.call("GET", `/api/v1/registries/git/${stored.id}`)).toMatchObject({ syncIntervalMinutes: 0, hasCredentials: true, authType: "TOKEN" });

    // Disable, then enable again: syncing is offered only while enabled.
    await row.getByRole("button", { name: "Disable Catalog repo" }).click();
    await waitForText(row.getByRole("cell").nth(3), "disabled");
    expect(await row.getByRole("button", { name: "Sync now Catalog repo" }).isDisabled()).toBe(true);
    expect((await service.call("GET", `/api/v1/registries/git/${stored.id}`)).enabled).toBe(false);
    await row.getByRole("button", { name: "Enable Catalog repo" }).click();
    await waitForText(row.getByRole("cell").nth(3), "enabled");

    // Sync now: the result object, as the API answers it.
    await row.getByRole("button", { name: "Sync now Catalog repo" }).click();
    const result = ui.page.getByRole("dialog", { name: "Sync of “Catalog repo”" });
    await result.getByText("The sync completed.").waitFor();
    // Found counts every readable manifest (the rejected one too); imported: 2 + 1 versions.
    const facts = result.getByRole("definition");
    expect(await facts.allTextContents()).toEqual(["4", "3", "0", "1", "0", expect.stringMatching(/^\d+(\.\d)? m?s$/), commit.slice(0, 12)]);
    const rejected = result.getByRole("table", { name: "Rejected manifests" }).getByRole("row").nth(1);
    expect(await rejected.getByRole("cell").allTextContents()).toEqual(["apps/broken/app.yaml", "the manifest declares no deployment profile"]);
    await ui.audit();
    await ui.screenshot("registries-git-sync-result");
    await result.getByRole("button", { name: "Close" }).click();
    const afterSync = await service.call("GET", `/api/v1/registries/git/${stored.id}`);
    expect(afterSync.lastSyncCommit).toBe(commit);

    // The catalog: the imported applications, with icon, tags, latest version and count.
    await ui.page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Applications" }).click();
    await waitForPath(ui.page, (url) => url.pathname === "/applications", "the catalog");
    await ui.settled();
    await ui.audit();
    const table = ui.page.getByRole("table", { name: "Applications" });
    const gateway = table.getByRole("row").filter({ hasText: "Vision Gateway" });
    expect(await gateway.getByRole("cell").nth(2).textContent()).toBe("2.0.0");
    expect(await gateway.getByRole("cell").nth(3).textContent()).toBe("2");
    const icon = gateway.locator("img.app-icon");
    await expect.poll(() => icon.evaluate((img) => (img as unknown as { naturalWidth: number; complete: boolean }).complete)).toBe(true);
    const iconResponse = await ui.page.request.get(`${service.url}${await icon.getAttribute("src")}`);
    expect(iconResponse.status()).toBe(200);
    expect(Buffer.from(await iconResponse.body()).equals(PNG)).toBe(true);
    const listed = await service.call("GET", "/api/v1/applications");
    expect(listed.total).toBe(2);
    expect(await table.getByRole("row").count()).toBe(3);
    await ui.screenshot("applications-catalog");

    // Filters live in the URL and ask the API for exactly that.
    await gateway.getByRole("link", { name: "Show applications tagged camera" }).click();
    await waitForPath(ui.page, (url) => url.searchParams.get("tag") === "camera", "the tag filter in the URL");
    await expect.poll(() => table.getByRole("row").count()).toBe(2);
    expect(await ui.page.getByLabel("Tag", { exact: true }).inputValue()).toBe("camera");
    await ui.page.getByRole("button", { name: "Clear the tag filter camera" }).click();
    await expect.poll(() => table.getByRole("row").count()).toBe(3);
    await ui.page.getByLabel("Search", { exact: true }).fill("plain");
    await waitForPath(ui.page, (url) => url.searchParams.get("q") === "plain", "the search in the URL");
    await expect.poll(() => table.getByRole("row").count()).toBe(2);
    await table.getByRole("row").filter({ hasText: "Plain Tool" }).waitFor();
    await ui.page.getByLabel("Source registry").selectOption({ label: "Catalog repo" });
    await waitForPath(ui.page, (url) => url.searchParams.get("registry") === stored.id, "the registry filter in the URL");
    await ui.page.getByLabel("Search", { exact: true }).fill("");
    await waitForPath(ui.page, (url) => !url.searchParams.has("q"), "the search cleared");
    await expect.poll(() => table.getByRole("row").count()).toBe(3);
    await ui.audit();

    // The application's page: versions newest first, release notes, profiles, parameters, provenance.
    await table.getByRole("link", { name: "Vision Gateway" }).click();
    const appId = listed.items.find((a: { key: string }) => a.key === "vision-gateway").id;
    await waitForPath(ui.page, (url) => url.pathname === `/applications/${appId}`, "the application page");
    await ui.settled();
    await ui.audit();
    const versions = ui.page.getByRole("list", { name: "Versions, newest first" });
    await versions.getByRole("heading", { name: "Version 1.0.0" }).waitFor();
    expect(await versions.getByRole("heading", { level: 3 }).allTextContents()).toEqual(["Version 2.0.0", "Version 1.0.0"]);
    const v2 = versions.getByRole("region", { name: "Version 2.0.0" });
    await v2.getByText("Second release: faster polling").waitFor();
    const profile = v2.getByRole("table", { name: "Deployment profiles of 2.0.0" }).getByRole("row").nth(1);
    expect(await profile.getByRole("cell").allTextContents()).toEqual(["compose-mainthe gateway", "compose", "app", "2 cores, 512Mi memory", "arm64, amd64"]);
    const params = v2.getByRole("table", { name: "Parameters of 2.0.0" });
    const paramRow = (name: string) => params.getByRole("row").filter({ has: ui.page.getByText(name, { exact: true }) }).getByRole("cell").allTextContents();
    expect(await paramRow("pollSeconds")).toEqual(["pollSecondshow often the gateway polls", "integer", "30", "5 to 3600", "no"]);
    expect(await paramRow("logLevel")).toEqual(["logLevel", "string", "info", "one of debug, info, warn", "no"]);
    expect(await paramRow("apiToken")).toEqual(["apiToken", "string", "none (required)", "required; at most 100 characters; matches ^tok-", "secret"]);
    const provenance = await v2.getByRole("definition").allTextContents();
    expect(provenance.slice(0, 3)).toEqual(["Catalog repo (Git)", "apps/gateway/v2/app.yaml", commit.slice(0, 12)]);
    const [apiV2, apiV1] = (await service.call("GET", `/api/v1/applications/${appId}/versions`)).items;
    expect([apiV2.version, apiV1.version]).toEqual(["2.0.0", "1.0.0"]);
    expect(apiV2.parameters.apiToken).toMatchObject({ secret: true, required: true, schema: { type: "string", maxLength: 100, pattern: "^tok-" } });
    await ui.screenshot("application-page");

    // Delete while a deployment uses it: the API's refusal, in the dialog; nothing deleted.
    const deployment = await service.call("POST", "/api/v1/deployments", {
      body: { name: "gateway-rollout", applicationId: appId, version: "2.0.0", profileId: "compose-main", parameters: { apiToken: "tok-abc" }, target: { labelSelector: { site: "nowhere" } } },
    });
    ui.expectStatus(409, "applications.delete");
    await ui.page.getByRole("button", { name: "Delete package" }).click();
    const confirm = ui.page.getByRole("dialog", { name: "Delete “Vision Gateway”?" });
    await confirm.getByRole("button", { name: "Delete package" }).click();
    await waitForText(confirm.getByRole("alert"), /Application "vision-gateway" is used by 1 deployment; delete them first/);
    await ui.audit();
    await ui.screenshot("application-delete-refused");
    expect((await service.api("GET", `/api/v1/applications/${appId}`)).status).toBe(200);

    // Without the deployment, the same click deletes it.
    await service.call("DELETE", `/api/v1/deployments/${deployment.id}?force=true`);
    await expect.poll(async () => (await service.api("GET", `/api/v1/deployments/${deployment.id}`)).status, { timeout: 30_000 }).toBe(404);
    await confirm.getByRole("button", { name: "Delete package" }).click();
    await waitForPath(ui.page, (url) => url.pathname === "/applications", "the catalog after the delete");
    await ui.page.getByText("“Vision Gateway” deleted with its 2 versions").waitFor();
    await ui.settled();
    await ui.audit();
    expect((await service.api("GET", `/api/v1/applications/${appId}`)).status).toBe(404);

    // Delete the registry.
    await ui.page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Registries" }).click();
    await waitForPath(ui.page, (url) => url.pathname === "/registries", "the registries");
    await ui.settled();
    await ui.audit();
    await gitCard.getByRole("button", { name: "Delete Catalog repo" }).click();
    await ui.page.getByRole("dialog", { name: "Delete “Catalog repo”?" }).getByRole("button", { name: "Delete registry" }).click();
    await gitCard.getByText("No Git registries").waitFor();
    expect((await service.call("GET", "/api/v1/registries/git")).total).toBe(0);
  });
});
