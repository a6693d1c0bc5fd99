// A page's style chunk that fails to load once (a connection reset by a busy server; or the
// service upgraded under an open tab) is asked for again and the page shows, with
// no error on the console (web/src/app/chunk-load-recovery.ts; that a chunk that keeps failing
// is not reloaded forever is its unit test).
import { describe, expect, it } from "vitest";
import { peerAvailable } from "../../support/peers.js";
import { ADMIN } from "../../support/console-service.js";
import { consoleSuite } from "../../support/browser.js";

describe.skipIf(!peerAvailable("chromium"))("a chunk that fails to load", () => {
  const suite = consoleSuite();

  it("asks for the stylesheet again and shows the page the person went to", async () => {
    const ui = await suite.open({ user: ADMIN });
    await ui.goto("/");
    // The Registries page's own stylesheet fails once, at the network level (no answer at all).
    let failed = 0;
    await ui.page.route(/\/assets\/RegistriesPage-[^/]+\.css$/, async (route) => {
      if (failed++ === 0) return route.abort("connectionreset");
      return route.continue();
    });
    let loads = 0;
    ui.page.on("load", () => loads++);
    await ui.page.getByRole("navigation").getByRole("link", { name: "Registries" }).click();
    await ui.page.getByRole("region", { name: "Git registries" }).getByText("No Git registries").waitFor();
    expect(new URL(ui.page.url()).pathname).toBe("/registries");
    expect(failed, "the stylesheet was asked for again after the failure").toBe(2);
    expect(loads, "no reload for a stylesheet").toBe(0);
    await ui.settled();
    await ui.audit();
    expect(ui.problems()).toEqual([]);
  });

});
