// "Sign in with <provider>" in a real Chromium: the console's sign-in page, the provider on
// another site (127.0.0.1 while the console is at localhost: sites differ by host, not by
// port), and back, signed in, on the overview. This is what proves the SameSite handling of
// src/modules/auth/oidc-sign-in-route.ts: the verifier cookie (Lax) must come back on the provider's
// cross-site redirect, and the Strict session cookie must go with the navigation that opens
// the console page. A refusal shows its sentence on the sign-in page.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import axe from "axe-core";
import { chromium, type BrowserContext, type Page, type Request } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildConsole, consoleBuildState } from "../../../src/lib/console-build.js";
import { ADMIN_KEY, createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { clientSettingsOf, startOidcProvider, type OidcProvider } from "../../support/oidc-provider.js";
import { peerAvailable, peerPath } from "../../support/peers.js";

const LOOPBACK = new Set(["localhost", "127.0.0.1", "[::1]"]);

describe.skipIf(!peerAvailable("chromium"))("sign in with the identity provider in Chromium", () => {
  let h: Harness;
  let provider: OidcProvider;
  let acme: Tenant;
  let context: BrowserContext;
  let userDataDir: string;
  /** the console as the browser reaches it: another site than the provider's */
  let consoleUrl: string;
  const problems: string[] = [];

  beforeAll(async () => {
    // As `npm start` does: the console's bundle must be the one of these sources.
    if (consoleBuildState() !== "fresh") await buildConsole();
    provider = await startOidcProvider();
    h = await createHarness(clientSettingsOf(provider));
    consoleUrl = h.url.replace("127.0.0.1", "localhost");
    provider.redirectUris.add(`${consoleUrl}/api/v1/auth/oidc/callback`);
    acme = await h.createTenant("Browser OIDC Acme");
    const viewer = await h.services.prisma.role.findFirstOrThrow({ where: { organizationId: null, name: "viewer" } });
    expect((await h.api("POST", "/api/v1/federation/group-mappings", { key: ADMIN_KEY, body: { group: "fleet-viewers", organizationId: acme.org.id, roleId: viewer.id } })).status).toBe(201);

    userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), "fleet-chromium-"));
    context = await chromium.launchPersistentContext(userDataDir, {
      executablePath: peerPath("chromium")!,
      headless: true,
      args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"],
    });
    context.on("request", (request: Request) => {
      const host = new URL(request.url()).hostname;
      if (!LOOPBACK.has(host) && !request.url().startsWith("data:")) problems.push(`request to ${request.url()}`);
    });
  });
  afterAll(async () => {
    await context?.close();
    if (userDataDir) fs.rmSync(userDataDir, { recursive: true, force: true });
    await h?.close();
    await provider?.close();
  });

  async function openPage(): Promise<Page> {
    const page = await context.newPage();
    page.on("pageerror", (err) => problems.push(`page error: ${err.message}`));
    page.on("console", (msg) => {
      if (msg.type() === "error") problems.push(`console.error: ${msg.text()}`);
    });
    return page;
  }

  async function expectAccessible(page: Page) {
    await page.evaluate(axe.source);
    const violations = await page.evaluate(async () => {
      // (runs in the page; the test's own types have no DOM)
      const page = globalThis as unknown as { axe: typeof axe; document: Parameters<typeof axe.run>[0] };
      const result = await page.axe.run(page.document);
      return result.violations.filter((v) => v.impact === "serious" || v.impact === "critical").map((v) => `${v.id}: ${v.help}`);
    });
    expect(violations).toEqual([]);
  }

  it("shows the provider's refusal as a sentence on the sign-in page", async () => {
    provider.answer = { error: "access_denied" };
    const page = await openPage();
    try {
      await page.goto(`${consoleUrl}/sign-in?next=%2Fdevices`);
      await page.getByRole("link", { name: "Sign in with Test IdP" }).click();
      await page.waitForURL((url) => url.pathname === "/sign-in" && url.searchParams.get("error") === "denied");
      expect(new URL(page.url()).searchParams.get("next")).toBe("/devices");
      await expect.poll(() => page.getByRole("alert").textContent()).toBe("Sign-in was cancelled at Test IdP.");
      await expectAccessible(page);
      expect((await context.cookies()).map((c) => c.name)).not.toContain("fm_session");
    } finally {
      provider.answer = "sign-in";
      await page.close();
    }
    expect(problems).toEqual([]);
  });

  it("signs in through the provider and lands signed in on the overview", async () => {
    provider.confirm = true;
    provider.user = { sub: "browser-user-1", email: "browser-user@idp.example.test", name: "Bea Browser", groups: ["fleet-viewers"] };
    const page = await openPage();
    try {
      await page.goto(`${consoleUrl}/sign-in`);
      const start = page.getByRole("link", { name: "Sign in with Test IdP" });
      await start.waitFor();
      await expectAccessible(page);

      // The document request that opens the overview after the provider: it must carry the
      // Strict session cookie (measured: after a plain 302 from the callback it carried none).
      const overviewRequest = page.waitForRequest((r) => r.isNavigationRequest() && r.url() === `${consoleUrl}/`);
      await start.click();
      // The provider's own page: the way back starts on its site, as with a real provider.
      await page.getByRole("button", { name: "Continue" }).click();
      const request = await overviewRequest;
      expect(await request.headerValue("cookie")).toMatch(/(^|; )fm_session=fmc_/);

      await page.getByRole("heading", { name: "Overview", level: 1 }).waitFor();
      expect(page.url()).toBe(`${consoleUrl}/`);
      await expect.poll(() => page.getByText(`The fleet of ${acme.org.name}, live.`).count()).toBe(1);

      const cookies = await context.cookies(consoleUrl);
      const session = cookies.find((c) => c.name === "fm_session");
      expect(session).toMatchObject({ httpOnly: true, sameSite: "Strict", path: "/" });
      expect(cookies.find((c) => c.name === "fm_oidc")).toBeUndefined();
      // Nothing of the provider's answer stayed in the address bar or the history entry.
      expect(page.url()).not.toContain("code=");

      const user = await h.services.prisma.user.findUniqueOrThrow({ where: { email: "browser-user@idp.example.test" } });
      expect(await h.services.prisma.session.count({ where: { userId: user.id, revokedAt: null, cookieTokenHash: { not: null } } })).toBe(1);
    } finally {
      provider.confirm = false;
      await page.close();
    }
    expect(problems).toEqual([]);
  });
});
