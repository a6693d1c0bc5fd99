// The enrollment page for a custom role that may hand out tokens but not see certificates:
// the page works (its tokens, the Create token button) and never asks for the organization's
// certificate authorities, which that role would be refused (the harness fails on any
// unannounced 403): the notice about a missing signing CA is for those who can see CAs.
import { beforeAll, describe, expect, it } from "vitest";
import { peerAvailable } from "../../support/peers.js";
import { type ConsoleService } from "../../support/console-service.js";
import { consoleSuite } from "../../support/browser.js";

let service: ConsoleService;

describe.skipIf(!peerAvailable("chromium"))("console enrollment without certificates:read", () => {
  const suite = consoleSuite();

  beforeAll(async () => {
    service = suite.service;
  });

  it("shows the tokens and the Create token button, and asks for no certificate authority", async () => {
    const user = await service.createUserWithPermissions("Enroller", ["devices:read", "enrollment:write"]);
    // The API refuses that role the CA list.
    const token = await service.bearer(user);
    expect((await service.api("GET", "/api/v1/ca-certificates", { key: null, token })).status).toBe(403);

    const ui = await suite.open({ user });
    const caRequests: string[] = [];
    ui.page.on("request", (req) => {
      if (/\/trpc\/[^?]*caCertificates\./.test(req.url())) caRequests.push(req.url());
    });
    await ui.goto("/enrollment-tokens");
    await ui.page.getByRole("heading", { name: "Enrollment", exact: true }).waitFor();
    await ui.page.getByRole("region", { name: "Tokens" }).getByText("No enrollment tokens yet").waitFor();
    await ui.page.getByRole("button", { name: "Create token" }).first().waitFor();
    await ui.settled();
    expect(caRequests).toEqual([]);
    expect(await ui.page.getByText("Devices cannot enroll yet").count()).toBe(0);
    await ui.audit();
    await ui.screenshot("enrollment-without-certificates");
  });
});
