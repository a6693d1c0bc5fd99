// The console's session in Chromium: a link opened without a session leads to sign-in and
// then to the page asked for; a session that ends while the console is open (here: ended
// from another sign-in of the same person) sends the next action to sign-in, which says so,
// and back; and a page of another origin cannot use the session's cookie to change anything.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { beforeAll, describe, expect, it } from "vitest";
import { peerAvailable } from "../../support/peers.js";
import { type ConsoleService, type SimulatedFleet, type User } from "../../support/console-service.js";
import { eventually } from "../../support/server-process.js";
import { consoleSuite, submitSignInForm, waitForPath, waitForText, type ConsolePage } from "../../support/browser.js";

let service: ConsoleService;
let fleet: SimulatedFleet;

function submitSignIn(ui: ConsolePage, user: User) {
  return submitSignInForm(ui.page, user.email, user.password);
}

/** A page on another origin of this machine that POSTs to the service, as an attacker's page would. */
async function attackerSite(html: string): Promise<{ port: number; close(): Promise<void> }> {
  const server = http.createServer((_req, res) => {
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
    res.end(html);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as AddressInfo).port,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

async function claimActive(deviceId: string): Promise<boolean> {
  return (await service.call<{ claimActive: boolean }>("GET", `/api/v1/devices/${deviceId}`)).claimActive;
}

describe.skipIf(!peerAvailable("chromium"))("console session", () => {
  const suite = consoleSuite();

  beforeAll(async () => {
    service = suite.service;
    fleet = await service.enrollFleet({ prefix: "session", devices: 3, labels: { site: "berlin" } });
  });


  it("a link opened without a session leads to sign-in, then to the page asked for, with its filters", async () => {
    const user = await service.createUser("operator");
    const ui = await suite.open();
    await ui.page.goto("/devices?status=online&labels=site%3Dberlin&sort=lastSeenAt&order=desc");
    await waitForPath(ui.page, (url) => url.pathname === "/sign-in", "the sign-in page");
    await ui.page.getByRole("heading", { name: "Sign in to Fleet Manager" }).waitFor();
    // Nobody was signed in: nothing "ended".
    expect(await ui.page.getByText("Your session has ended").count()).toBe(0);
    await ui.audit();

    await submitSignIn(ui, user);
    const url = await waitForPath(ui.page, (u) => u.pathname === "/devices", "the devices page");
    expect(Object.fromEntries(url.searchParams)).toEqual({ status: "online", labels: "site=berlin", sort: "lastSeenAt", order: "desc" });
    await ui.settled();
    await ui.audit();
    expect(await ui.page.getByRole("checkbox", { name: "online" }).isChecked()).toBe(true);
    expect(await ui.page.getByLabel("Label selector").inputValue()).toBe("site=berlin");
    await waitForText(ui.page.getByRole("navigation", { name: "Device pages" }).locator("span").first(), "1–3 of 3");
  });

  it("a session ended elsewhere sends the next action to sign-in, which says so, then back to that page", async () => {
    const user = await service.createUser("operator");
    const ui = await suite.open();
    await ui.signIn(user);
    await ui.goto("/devices?status=online");
    await ui.page.getByRole("link", { name: fleet.devices[0].reportedDeviceId }).waitFor();

    // The same person signs in with the API and ends every other session: the console's too.
    ui.expectStatus(401);
    const token = await service.bearer(user);
    const ended = await service.api("DELETE", "/api/v1/profile/sessions", { key: null, token });
    expect(ended.status, ended.text).toBe(200);

    await ui.page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Groups" }).click();
    const signIn = await waitForPath(ui.page, (url) => url.pathname === "/sign-in", "the sign-in page");
    expect(signIn.searchParams.get("reason")).toBe("expired");
    await ui.page.getByText("Your session has ended. Sign in again to continue where you were.").waitFor();
    await ui.audit();

    await submitSignIn(ui, user);
    await waitForPath(ui.page, (url) => url.pathname === "/groups", "the groups page asked for");
    await ui.page.getByRole("heading", { level: 1, name: "Groups" }).waitFor();
    await ui.settled();
    await ui.audit();
  });

  it("refuses a POST from a page of another origin that carries the session cookie (403), and nothing changes", async () => {
    const user = await service.createUser("owner");
    const target = fleet.devices[1].deviceId!;
    expect(await claimActive(target)).toBe(true);
    const path = `/api/v1/devices/${target}/release-claim`;
    const action = `${service.url}${path}`;
    // A request without a body needs no preflight, and the service takes an action without a
    // body as an empty one: only the cookie rule stands between this page and the device.
    // (The page cannot read the answer either way: the service's responses are same-origin
    // resources, so the service's request log tells what it answered.)
    const attacker = await attackerSite(`<!doctype html><html lang="en"><title>Win a prize</title><body><h1>Win a prize</h1>
      <script>fetch(${JSON.stringify(action)}, { method: "POST", mode: "no-cors", credentials: "include" }).catch(() => undefined);</script></body></html>`);
    const answers = () => service.requestLog().filter((r) => r.method === "POST" && r.path === path).map((r) => r.status);
    try {
      const ui = await suite.open();
      await ui.signIn(user);
      ui.expectStatus(403, "/release-claim");

      // The same site (127.0.0.1), another port: SameSite=Strict lets the cookie go along, the service refuses.
      const sameSite = ui.page.waitForRequest((req) => req.url() === action);
      await ui.page.goto(`http://127.0.0.1:${attacker.port}/`);
      const request = await sameSite;
      expect(await request.headerValue("cookie")).toMatch(/fm_session=fmc_/);
      expect(await eventually(async () => answers().length === 1 && answers(), 10_000, "the service's answer")).toEqual([403]);
      expect(await claimActive(target)).toBe(true);

      // Another site (localhost): the browser does not send the cookie at all; unauthenticated, refused.
      const crossSite = ui.page.waitForRequest((req) => req.url() === action);
      await ui.page.goto(`http://localhost:${attacker.port}/`);
      expect(await (await crossSite).headerValue("cookie")).toBeNull();
      expect(await eventually(async () => answers().length === 2 && answers(), 10_000, "the service's answer")).toEqual([403, 401]);
      expect(await claimActive(target)).toBe(true);

      // The console itself, same origin and same cookie, may: the refusal above was the cookie rule.
      await ui.goto(`/devices/${target}?tab=activity`);
      await ui.page.getByRole("button", { name: "Release claim" }).click();
      await ui.page.getByRole("dialog", { name: "Release the reported-device-id claim?" }).waitFor();
      await ui.audit();
      await ui.page.getByRole("dialog").getByRole("button", { name: "Release claim" }).click();
      await ui.page.getByText("claim released", { exact: true }).waitFor();
      expect(await claimActive(target)).toBe(false);
    } finally {
      await attacker.close();
    }
  });
});
