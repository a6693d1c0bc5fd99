// The organization's settings page in Chromium: a Super Admin sets the description, contact,
// a brand colour (a light yellow the console must darken to stay legible) and a logo; after a
// reload the console paints itself with them (the accent variables, a primary button, the
// sidebar's logo), in the light and the dark theme with axe passing, and the API stores them.
// An administrator (organizations:write) may only rename; an owner changes the description and
// the branding (organizations:branding, which the role editor offers), and a reload paints the
// brand colour from the first frame; a viewer sees the settings and no control that changes them.
import { beforeAll, describe, expect, it } from "vitest";
import { peerAvailable } from "../../support/peers.js";
import { ADMIN, type ConsoleService, type User } from "../../support/console-service.js";
import { consoleSuite, waitForText, type ConsolePage } from "../../support/browser.js";
import { paletteFor } from "../../../web/src/organizations/branding.js";

let service: ConsoleService;
let admin: User;
let viewer: User;

const LOGO_SVG = '<svg xmlns="http://www.w3.org/2000/svg" width="90" height="26" viewBox="0 0 90 26"><rect width="90" height="26" rx="5" fill="#7a5a00"/><text x="45" y="18" font-family="sans-serif" font-size="14" fill="#fff" text-anchor="middle">ACME</text></svg>';
const LOGO_DATA_URL = `data:image/svg+xml;base64,${Buffer.from(LOGO_SVG).toString("base64")}`;
const BRAND = "#ffcc00";

async function accentOf(ui: ConsolePage) {
  return ui.page.evaluate(() => {
    const { document, getComputedStyle } = globalThis as unknown as { document: { documentElement: object }; getComputedStyle(el: object): { getPropertyValue(n: string): string } };
    return getComputedStyle(document.documentElement).getPropertyValue("--accent").trim();
  });
}

/**
 * Waits until the console paints with `accent`: the branding arrives with the organization,
 * after the page's first paint (a fresh load shows the default accent until then).
 */
async function expectAccent(ui: ConsolePage, accent: string) {
  await ui.page.waitForFunction((want) => {
    const { document, getComputedStyle } = globalThis as unknown as { document: { documentElement: object }; getComputedStyle(el: object): { getPropertyValue(n: string): string } };
    return getComputedStyle(document.documentElement).getPropertyValue("--accent").trim() === want;
  }, accent, { timeout: 10_000 }).catch(() => undefined);
  expect(await accentOf(ui)).toBe(accent);
}

async function primaryButtonBackground(ui: ConsolePage, name: string) {
  return ui.page.getByRole("button", { name }).evaluate((el) => {
    const { getComputedStyle } = globalThis as unknown as { getComputedStyle(el: object): { backgroundColor: string } };
    return getComputedStyle(el).backgroundColor;
  });
}

const rgb = (hex: string) => `rgb(${[1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16)).join(", ")})`;

describe.skipIf(!peerAvailable("chromium"))("organization settings and branding", () => {
  const suite = consoleSuite();

  beforeAll(async () => {
    service = suite.service;
    admin = await service.createUser("admin", { name: "Ada Admin" });
    viewer = await service.createUser("viewer", { name: "Vic Viewer" });
  });

  it("a Super Admin's colour and logo are stored and paint the console after a reload, legibly in both themes", async () => {
    const ui = await suite.open({ user: ADMIN });
    await ui.goto("/");
    await ui.page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Organization", exact: true }).click();
    await ui.page.getByRole("heading", { name: "Organization settings", level: 1 }).waitFor();
    await ui.settled();
    await ui.audit();

    const details = ui.page.getByRole("form", { name: "Organization details" });
    await details.getByLabel("Description").fill("Robots that sort parcels");
    await details.getByLabel("Primary contact").fill("Grace Hopper, +49 30 1234567");
    await details.getByLabel("Billing e-mail").fill("billing@acme.test");
    await details.getByRole("button", { name: "Save details" }).click();
    await ui.page.getByText("Organization details saved").waitFor();

    const branding = ui.page.getByRole("form", { name: "Branding" });
    await branding.getByLabel("Use an organization colour").check();
    await branding.getByLabel("Hex value").fill("#ffcc0");
    await branding.getByText("A colour as #rrggbb").waitFor();
    expect(await branding.getByRole("button", { name: "Save branding" }).isDisabled()).toBe(true);
    await branding.getByLabel("Hex value").fill(BRAND);
    const expected = { light: paletteFor(BRAND, "light"), dark: paletteFor(BRAND, "dark") };
    expect(expected.light.accent).not.toBe(BRAND); // too light for white text and white surfaces
    await waitForText(branding.getByRole("group", { name: "Preview" }), (t) => t.includes(expected.light.accent) && t.includes("adjusted for contrast"));

    // A file that is not an image is refused next to the field, before anything is sent.
    await branding.getByLabel("Choose logo").setInputFiles({ name: "notes.txt", mimeType: "text/plain", buffer: Buffer.from("hello") });
    await branding.getByText("A PNG, JPEG, SVG, WebP or GIF image").waitFor();
    await branding.getByLabel("Choose logo").setInputFiles({ name: "acme.svg", mimeType: "image/svg+xml", buffer: Buffer.from(LOGO_SVG) });
    await branding.getByRole("img", { name: "Logo preview" }).waitFor();
    await ui.audit();
    await branding.getByRole("button", { name: "Save branding" }).click();
    await ui.page.getByText("Branding saved").waitFor();

    // Stored as the API answers it.
    const stored = await service.call("GET", `/api/v1/organizations/${service.defaultOrg.id}`);
    expect(stored).toMatchObject({
      description: "Robots that sort parcels",
      primaryContact: "Grace Hopper, +49 30 1234567",
      billingEmail: "billing@acme.test",
      branding: { primaryColor: BRAND, logo: LOGO_DATA_URL },
    });

    // Applied at once, and again after a reload (read from the API, not the page's memory).
    await ui.page.reload();
    await ui.settled();
    await ui.page.getByRole("complementary").getByRole("img", { name: `${service.defaultOrg.name} logo` }).waitFor();
    expect(await ui.page.getByRole("complementary").getByRole("img", { name: `${service.defaultOrg.name} logo` }).getAttribute("src")).toBe(LOGO_DATA_URL);
    await expectAccent(ui, expected.light.accent);
    expect(await primaryButtonBackground(ui, "Save branding")).toBe(rgb(expected.light.accent));
    await ui.audit();
    await ui.screenshot("organization-settings-branding");

    // Every page carries it: the overview, audited with the brand colour.
    await ui.goto("/devices");
    await expectAccent(ui, expected.light.accent);

    // The dark theme gets its own, lighter variant, axe passing there too.
    await ui.page.getByRole("button", { name: /^Theme:/ }).click();
    await ui.page.getByRole("list", { name: "Theme" }).getByRole("button", { name: "Dark" }).click();
    await expectAccent(ui, expected.dark.accent);
    await ui.goto("/organization");
    await expectAccent(ui, expected.dark.accent);
    await ui.screenshot("organization-settings-branding-dark");
  });

  it("an administrator may rename and sees the branding; a viewer sees the settings and no control that changes them", async () => {
    const asAdmin = await suite.open({ user: admin });
    await asAdmin.goto("/organization");
    const details = asAdmin.page.getByRole("form", { name: "Organization details" });
    // The cards show once the organization is read: look for what they leave out only then.
    await details.getByLabel("Name").waitFor();
    expect(await asAdmin.page.getByRole("form", { name: "Branding" }).count()).toBe(0);
    expect(await asAdmin.page.getByRole("button", { name: "Save branding" }).count()).toBe(0);
    expect(await details.getByLabel("Description").count()).toBe(0); // PATCH is the Super Admin's
    await asAdmin.page.getByRole("region", { name: "Branding" }).getByText(BRAND).waitFor();
    await expectAccent(asAdmin, paletteFor(BRAND, "light").accent);
    await details.getByLabel("Name").fill("Default Logistics");
    await details.getByRole("button", { name: "Rename" }).click();
    await asAdmin.page.getByText("Organization details saved").waitFor();
    expect(await service.call("GET", `/api/v1/organizations/${service.defaultOrg.id}`)).toMatchObject({ name: "Default Logistics", branding: { primaryColor: BRAND } });
    await asAdmin.page.getByRole("complementary").getByRole("img", { name: "Default Logistics logo" }).waitFor();
    // remote access: off until an administrator turns it on (remote:manage)
    const remote = asAdmin.page.getByRole("form", { name: "Remote-access settings" });
    await remote.getByRole("checkbox", { name: "Allow remote access" }).check();
    await remote.getByLabel("Only devices matching").fill("site=berlin");
    await remote.getByRole("button", { name: "Save remote-access settings" }).click();
    await asAdmin.page.getByText("Remote-access settings saved").waitFor();
    await asAdmin.audit();

    const asViewer = await suite.open({ user: viewer });
    await asViewer.goto("/organization");
    await asViewer.page.getByRole("region", { name: "Details" }).getByText("Robots that sort parcels").waitFor();
    for (const name of [/^Rename$/, /^Save/, /^Choose logo$/, /^Remove logo$/]) {
      expect(await asViewer.page.getByRole("button", { name }).count(), String(name)).toBe(0);
    }
    expect(await asViewer.page.getByRole("textbox").count()).toBe(0);
    expect(await asViewer.page.getByRole("checkbox").count()).toBe(0);
    // the remote-access policy the administrator saved, as facts
    const remoteFacts = asViewer.page.getByRole("region", { name: "Remote access" });
    await remoteFacts.getByText("site=berlin").waitFor();
    expect(await remoteFacts.getByRole("definition").first().textContent()).toBe("yes");
    await expectAccent(asViewer, paletteFor(BRAND, "light").accent);
    await asViewer.screenshot("organization-settings-viewer");
  });
  it("an owner changes the description and the brand colour under organizations:branding, and a reload shows no other colour first", async () => {
    const owner = await service.createUser("owner", { name: "Olga Owner" });
    const ui = await suite.open({ user: owner });
    await ui.goto("/organization");
    const details = ui.page.getByRole("form", { name: "Organization details" });
    await details.getByLabel("Description").fill("Parcel robots, run by their owner");
    expect(await details.getByLabel("Primary contact").count()).toBe(0); // still the Super Admin's
    await details.getByRole("button", { name: "Save details" }).click();
    await ui.page.getByText("Organization details saved").waitFor();

    const OWNER_BRAND = "#0a7d5a";
    const branding = ui.page.getByRole("form", { name: "Branding" });
    await branding.getByLabel("Hex value").fill(OWNER_BRAND);
    await branding.getByRole("button", { name: "Save branding" }).click();
    await ui.page.getByText("Branding saved").waitFor();
    expect(await service.call("GET", `/api/v1/organizations/${service.defaultOrg.id}`)).toMatchObject({
      description: "Parcel robots, run by their owner",
      branding: { primaryColor: OWNER_BRAND, logo: LOGO_DATA_URL },
    });
    const accent = paletteFor(OWNER_BRAND, "light").accent;
    await expectAccent(ui, accent);
    await ui.audit();
    await ui.screenshot("organization-settings-owner");

    // A reload while the organization's answer is held back: the shell is drawn, and already in
    // the brand's colour (the one this browser last showed), not the console's own.
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let held!: () => void;
    const asked = new Promise<void>((resolve) => (held = resolve));
    await ui.page.route((url) => url.pathname.includes("organizations.get"), async (route) => {
      held();
      await released;
      await route.continue();
    });
    await ui.page.reload();
    await ui.page.getByRole("navigation", { name: "Main" }).waitFor();
    await asked; // the organization is being read, its answer held
    expect(await accentOf(ui)).toBe(accent);
    release();
    await ui.page.unrouteAll({ behavior: "wait" });
    await ui.settled();
    await ui.page.getByRole("form", { name: "Branding" }).waitFor();
    expect(await accentOf(ui)).toBe(accent);
    await ui.audit();

    // The role editor offers the permission, described as what it allows.
    await ui.goto("/members/roles");
    await ui.page.getByRole("button", { name: "Create role" }).click();
    const dialog = ui.page.getByRole("dialog");
    const box = dialog.getByRole("checkbox", { name: "organizations:branding", exact: true });
    await box.waitFor();
    expect(await ui.page.locator(`[id="${await box.getAttribute("aria-describedby")}"]`).textContent()).toMatch(/description and branding/);
    await ui.audit();
  });
});
