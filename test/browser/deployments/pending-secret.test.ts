// A deployment declared as code whose version requires a secret parameter, in Chromium: the
// apply creates it as a draft "pending secret"; its page says so and offers "Set secret
// parameters" (the one change open for a managed deployment, no edit or delete); the secret
// set there is stored (never shown), the page no longer says pending, and the deployment starts.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { peerAvailable } from "../../support/peers.js";
import { ADMIN, type ConsoleService } from "../../support/console-service.js";
import { consoleSuite, waitForText } from "../../support/browser.js";
import { importApplications, type ImportedCatalog } from "./support.js";

let service: ConsoleService;
let catalog: ImportedCatalog;
const TOKEN = "tok-" + "browser".repeat(3);

describe.skipIf(!peerAvailable("chromium"))("console: a managed deployment pending its secret", () => {
  const suite = consoleSuite();

  beforeAll(async () => {
    service = suite.service;
    catalog = await importApplications(service, {
      "badge-reader": {
        name: "Badge Reader",
        parameters: {
          apiToken: { secret: true, required: true, description: "token of the badge service", schema: { type: "string" }, targets: [{ pointer: "API_TOKEN", components: ["app"] }] },
        },
      },
    });
    await service.enrollFleet({ prefix: "gate", devices: 1, labels: { door: "north" } });
  }, 120_000);

  afterAll(async () => {
    await catalog?.git.close();
  });

  it("says pending secret, sets it from the page, and the deployment starts", async () => {
    const orgId = service.defaultOrg.id;
    const doc = `apiVersion: fleet.app/v1
kind: Deployment
metadata: { name: north-door }
spec:
  applicationId: ${catalog.apps["badge-reader"]}
  version: "1.0.0"
  profileId: compose
  target: { labelSelector: { door: north } }
`;
    const applied = await service.call<{ resources: Array<{ name: string; status: string }> }>("POST", `/api/v1/organizations/${orgId}/config/apply`, {
      body: { files: [{ path: "doors.yaml", content: doc }] },
    });
    expect(applied.resources.find((r) => r.name === "north-door")).toMatchObject({ status: "pending secret" });
    const list = await service.call<{ items: Array<{ id: string; name: string }> }>("GET", "/api/v1/deployments?search=north-door");
    const id = list.items[0].id;

    const ui = await suite.open({ user: ADMIN });
    await ui.goto(`/deployments/${id}`);
    await waitForText(ui.page.getByTestId("pending-secrets"), "Pending secret: apiToken (it cannot start without)");
    expect(await ui.page.getByRole("button", { name: "Delete", exact: true }).count()).toBe(0);
    await ui.page.getByRole("button", { name: "Set secret parameters", exact: true }).click();
    const dialog = ui.page.getByRole("dialog", { name: "Secret parameters of north-door" });
    await dialog.getByLabel("apiToken").fill(TOKEN);
    await ui.audit();
    await ui.screenshot("deployments-pending-secret-dialog");
    await dialog.getByRole("button", { name: "Save", exact: true }).click();
    await dialog.waitFor({ state: "hidden" });
    await expect.poll(() => ui.page.getByTestId("pending-secrets").count()).toBe(0);
    expect(await ui.page.content()).not.toContain(TOKEN);

    const stored = await service.call<{ secretParameterNames: string[]; parameters: Record<string, unknown> }>("GET", `/api/v1/deployments/${id}`);
    expect(stored).toMatchObject({ secretParameterNames: ["apiToken"], parameters: { apiToken: "********" } });
    const started = await service.call<{ status: string }>("POST", `/api/v1/deployments/${id}/start`);
    expect(started.status).toBe("running");
    await ui.screenshot("deployments-pending-secret-set");
  }, 240_000);
});
