// Signing in to the console in Chromium, against a service started as `npm start` does:
// e-mail and password lead to the page that was asked for, on an HttpOnly, SameSite=Strict
// cookie no script can read; a wrong password says so without saying which part was wrong;
// the login rate limit answers with how long to wait; signing out ends the session.
import { beforeAll, describe, expect, it } from "vitest";
import { peerAvailable } from "../../support/peers.js";
import { ADMIN, type ConsoleService } from "../../support/console-service.js";
import { consoleSuite, submitSignInForm, waitForPath, waitForText, type ConsolePage } from "../../support/browser.js";

let service: ConsoleService;

function submitSignIn(ui: ConsolePage, email: string, password: string) {
  return submitSignInForm(ui.page, email, password);
}

describe.skipIf(!peerAvailable("chromium"))("console sign-in", () => {
  const suite = consoleSuite({ RATE_LIMIT_LOGIN_FAILURES: "3" });

  beforeAll(async () => {
    // Three failures per account (thirty per address) before sign-in is throttled.
    service = suite.service;
  });


  it("opens the sign-in page at /, signs in with e-mail and password and shows the overview, on a cookie scripts cannot read", async () => {
    const ui = await suite.open();
    await ui.page.goto("/");
    await waitForPath(ui.page, (url) => url.pathname === "/sign-in", "the sign-in page");
    await ui.page.getByRole("heading", { name: "Sign in to Fleet Manager" }).waitFor();
    // Nobody was signed in: nothing "ended".
    expect(await ui.page.getByText("Your session has ended").count()).toBe(0);
    // Whoever just started the service learns where the first start's password is kept (src/first-start.ts).
    expect(await ui.page.getByText(/^First start\?/).textContent()).toBe("First start? The Super Admin’s e-mail and generated password were printed where the service started, " +
      "and are kept in first-start.txt in its data directory (DATA_DIR, ./data by default) until that admin changes the password.");
    await ui.audit();
    await ui.screenshot("auth-sign-in");

    await submitSignIn(ui, ADMIN.email, ADMIN.password);
    await waitForPath(ui.page, (url) => url.pathname === "/", "the overview");
    await ui.page.getByRole("heading", { level: 1, name: "Overview" }).waitFor();
    await ui.page.getByRole("button", { name: `Account: ${ADMIN.name}` }).waitFor();
    await ui.settled();
    await ui.audit();

    const cookies = await ui.context.cookies();
    const session = cookies.find((c) => c.name === "fm_session");
    expect(session).toMatchObject({ httpOnly: true, sameSite: "Strict", path: "/" });
    const scriptCookies = await ui.page.evaluate(() => (globalThis as unknown as { document: { cookie: string } }).document.cookie);
    expect(scriptCookies).not.toContain("fm_session");
    // The API knows the cookie's session: who is signed in, where.
    const context = await ui.page.request.get("/api/v1/tenant/context");
    expect(context.status()).toBe(200);
    expect(await context.json()).toMatchObject({ email: ADMIN.email, organization: { slug: "default" } });
  });

  it("refuses a wrong password and an unknown e-mail with the same message, naming neither", async () => {
    const user = await service.createUser("operator");
    const ui = await suite.open();
    ui.expectStatus(401, "auth.signIn");
    await ui.goto("/sign-in");

    await submitSignIn(ui, user.email, "not-the-password-1");
    const wrongPassword = await waitForText(ui.page.getByRole("alert"), (t) => t.length > 0);
    await ui.audit();
    await submitSignIn(ui, `nobody-${Date.now()}@console.test`, "not-the-password-1");
    await ui.page.getByRole("alert").waitFor();
    const unknownEmail = await waitForText(ui.page.getByRole("alert"), (t) => t.length > 0);

    expect(wrongPassword).toBe(unknownEmail);
    expect(wrongPassword).toMatch(/e-mail or password/i);
    expect(wrongPassword).not.toMatch(/not found|no such|unknown|does not exist|incorrect password|wrong password\b/i);
    expect(new URL(ui.page.url()).pathname).toBe("/sign-in");
    expect((await ui.context.cookies()).find((c) => c.name === "fm_session")).toBeUndefined();
  });

  it("says how long to wait once the account's failed sign-ins are used up, and refuses even the right password until then", async () => {
    const user = await service.createUser("viewer");
    const ui = await suite.open();
    ui.expectStatus(401, "auth.signIn");
    ui.expectStatus(429, "auth.signIn");
    await ui.goto("/sign-in");
    for (let i = 0; i < 3; i++) {
      await submitSignIn(ui, user.email, `wrong-password-${i}-x`);
      await waitForText(ui.page.getByRole("alert"), /e-mail or password/i);
      // The next attempt waits until this one has been answered.
      await ui.page.getByRole("button", { name: "Sign in" }).waitFor();
      await ui.page.getByLabel("Password").fill("");
    }
    await submitSignIn(ui, user.email, user.password);
    const message = await waitForText(ui.page.getByRole("alert"), (t) => !/e-mail or password/i.test(t));
    const seconds = /(\d+)\s*(s\b|seconds?|min)/.exec(message);
    expect(message, "the message says how long to wait").toMatch(/(retry|try again|wait).*\d+/i);
    expect(seconds).not.toBeNull();
    await ui.audit();
    expect(new URL(ui.page.url()).pathname).toBe("/sign-in");

    // The API agrees: 429 with Retry-After, for the right password too.
    const res = await service.api("POST", "/api/v1/auth/login", { key: null, body: { email: user.email, password: user.password } });
    expect(res.status).toBe(429);
    expect(Number(res.headers.get("retry-after"))).toBeGreaterThan(0);
  });

  it("opens the console signed out without one error in the browser's console: no 401 to ask who is signed in", async () => {
    const ui = await suite.open();
    // Every console message and every refused answer, the browser's own "Failed to load
    // resource" lines included (the harness checks the answers, not those lines).
    const errors: string[] = [];
    ui.page.on("console", (message) => void (message.type() === "error" && errors.push(message.text())));
    ui.page.on("response", (response) => void (response.status() >= 400 && errors.push(`${response.status()} ${response.url()}`)));
    await ui.page.goto("/devices");
    await waitForPath(ui.page, (url) => url.pathname === "/sign-in" && url.searchParams.get("next") === "/devices", "sign-in, then back to /devices");
    await ui.page.getByRole("heading", { name: "Sign in to Fleet Manager" }).waitFor();
    await ui.page.waitForLoadState("networkidle");
    await ui.audit();
    expect(errors).toEqual([]);
  });

  it("signs out from the user menu: the pages stop before the session ends, which then ends on the server, and the cookies are gone", async () => {
    const user = await service.createUser("operator");
    const ui = await suite.open();
    await ui.signIn(user);
    // The flag the console reads to know whether to ask who is signed in: readable, no secret.
    expect((await ui.context.cookies()).find((c) => c.name === "fm_signed_in")).toMatchObject({ value: "1", httpOnly: false, sameSite: "Strict" });
    await ui.goto("/devices");
    const cookie = (await ui.context.cookies()).find((c) => c.name === "fm_session")!.value;

    // The sign-out request is held until the test lets it go: by then the signed-in pages must
    // be gone (nothing left to poll or refetch), and nothing but the sign-out (and the sign-in page's public reads) may reach the
    // service after it (a read answered after the session ends is a 401: "your session has ended").
    let logoutStarted = false;
    const after: string[] = [];
    ui.page.on("request", (request) => {
      const url = new URL(request.url());
      if (logoutStarted && /^\/(trpc|api)\//.test(url.pathname) && !/auth[./]/.test(url.pathname)) after.push(url.pathname);
    });
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const held = new Promise<void>((resolve) => {
      void ui.page.route((url) => url.pathname.includes("auth.logout") || url.pathname === "/api/v1/auth/logout", async (route) => {
        logoutStarted = true;
        resolve();
        await released;
        await route.continue();
      });
    });

    await ui.page.getByRole("button", { name: `Account: ${user.name}` }).click();
    await ui.audit();
    await ui.page.getByRole("button", { name: "Sign out" }).click();
    await held;
    expect(await ui.page.getByRole("navigation", { name: "Main" }).count(), "the signed-in area is gone before the session ends").toBe(0);
    expect(await ui.page.getByRole("heading", { level: 1, name: "Devices" }).count()).toBe(0);
    await ui.page.getByRole("status").filter({ hasText: "Signing out" }).waitFor();
    release();
    await waitForPath(ui.page, (url) => url.pathname === "/sign-in", "the sign-in page");
    await ui.page.getByRole("heading", { name: "Sign in to Fleet Manager" }).waitFor();
    await ui.page.waitForLoadState("networkidle");
    await ui.audit();
    expect(after, "requests after the sign-out began").toEqual([]);
    const cookies = (await ui.context.cookies()).map((c) => c.name);
    expect(cookies).not.toContain("fm_session");
    expect(cookies).not.toContain("fm_signed_in");

    // The old cookie, presented again by hand, no longer names a session.
    const res = await service.api("GET", "/api/v1/tenant/context", { key: null, headers: { cookie: `fm_session=${cookie}` } });
    expect(res.status).toBe(401);
    // And the console behind it is closed: back to sign-in.
    await ui.page.goto("/devices");
    await waitForPath(ui.page, (url) => url.pathname === "/sign-in" && url.searchParams.get("next") === "/devices", "sign-in, then back to /devices");
  });
});
