// Roles in Chromium: a custom role created in the browser with the permission picker (the
// catalogue read from the API) limits a member exactly as the API says: what it grants works,
// what it does not is refused with 403 and the console shows no control for it. Editing the
// role in the browser changes what the member may do on their next request. A viewer sees no
// write control on any page of Members & roles or API keys; an owner sees them all.
import { beforeAll, describe, expect, it } from "vitest";
import type { Page } from "playwright-core";
import { peerAvailable } from "../../support/peers.js";
import { ADMIN, type ConsoleService, type User } from "../../support/console-service.js";
import { consoleSuite, waitForText } from "../../support/browser.js";

let service: ConsoleService;
let member: User;

const membersPath = () => `/api/v1/organizations/${service.defaultOrg.id}/members`;

/** Buttons and links that change something on these pages, by the names the console gives them. */
const WRITE_CONTROLS = [
  /^Invite/, /^Change role/, /^Remove/, /^Resend/, /^Revoke/, /^Create role$/, /^Edit role/, /^Delete role/, /^Create API key$/, /^Rotate/,
];

async function writeControls(page: Page): Promise<string[]> {
  const found: string[] = [];
  for (const role of ["button", "link"] as const) {
    for (const name of WRITE_CONTROLS) {
      const count = await page.getByRole(role, { name }).count();
      if (count > 0) found.push(`${role} ${name}`);
    }
  }
  return found;
}

/** The pages of these areas, each with something that proves its data arrived. */
const PAGES = [
  { path: "/members", loaded: (p: Page) => p.getByRole("table", { name: "Members" }).getByRole("row").nth(2).waitFor() },
  { path: "/members/invitations", loaded: (p: Page) => p.getByRole("table", { name: "Invitations" }).getByRole("row").filter({ hasText: "pending" }).first().waitFor() },
  { path: "/members/roles", loaded: (p: Page) => p.getByRole("table", { name: "Roles" }).getByRole("row").filter({ hasText: "custom" }).first().waitFor() },
  { path: "/api-keys", loaded: (p: Page) => p.getByRole("table", { name: "API keys" }).getByRole("row").filter({ hasText: "viewer check key" }).waitFor() },
];

describe.skipIf(!peerAvailable("chromium"))("console roles and permissions", () => {
  const suite = consoleSuite();

  beforeAll(async () => {
    service = suite.service;
    member = await service.createUser("viewer", { name: "Rita Restricted" });
  });

  it("a custom role created in the browser limits a member as the API says", async () => {
    const admin = await suite.open({ user: ADMIN });
    await admin.goto("/members/roles");
    const table = admin.page.getByRole("table", { name: "Roles" });
    await table.getByRole("row").filter({ hasText: "viewer" }).waitFor();
    // Built-in roles are read-only: no edit or delete for them.
    for (const builtIn of ["owner", "admin", "operator", "viewer"]) {
      expect(await admin.page.getByRole("button", { name: `Edit role ${builtIn}` }).count()).toBe(0);
      expect(await admin.page.getByRole("button", { name: `Delete role ${builtIn}` }).count()).toBe(0);
    }

    await admin.page.getByRole("button", { name: "Create role" }).click();
    const dialog = admin.page.getByRole("dialog", { name: "Create a role" });
    // The picker shows the API's catalogue, grouped by resource.
    const catalogue = (await service.call("GET", "/api/v1/roles/permissions")).items as { key: string; resource: string }[];
    for (const resource of new Set(catalogue.filter((p) => p.key !== "platform:admin").map((p) => p.resource))) {
      await dialog.getByRole("group", { name: resource, exact: true }).waitFor();
    }
    await dialog.getByLabel("Name").fill("member-reader");
    await dialog.getByLabel("Description (optional)").fill("sees the devices and the members");
    await dialog.getByRole("checkbox", { name: "devices:read", exact: true }).check();
    await dialog.getByRole("checkbox", { name: "members:read", exact: true }).check();
    await admin.audit();
    await admin.screenshot("roles-create");
    await dialog.getByRole("button", { name: "Create role" }).click();
    await dialog.waitFor({ state: "hidden" });
    const roleRow = table.getByRole("row").filter({ hasText: "member-reader" });
    await waitForText(roleRow, (t) => t.includes("custom") && t.includes("devices:read") && t.includes("members:read"));
    const role = (await service.call("GET", "/api/v1/roles?limit=200")).items.find((r: { name: string }) => r.name === "member-reader");
    expect(role).toMatchObject({ system: false, description: "sees the devices and the members", permissions: ["devices:read", "members:read"] });

    // Given to a member in the browser; the roles page counts its holders as the API does.
    await admin.goto("/members");
    await admin.page.getByRole("button", { name: "Change role of Rita Restricted" }).click();
    const change = admin.page.getByRole("dialog", { name: "Change the role of Rita Restricted" });
    await change.getByLabel("Role").selectOption({ label: "member-reader (custom)" });
    await change.getByRole("button", { name: "Change role" }).click();
    await change.waitFor({ state: "hidden" });
    expect((await service.call("GET", `${membersPath()}/${member.id}`)).role.name).toBe("member-reader");
    await admin.goto("/members/roles");
    const stats = await service.call("GET", `${membersPath()}/stats`);
    expect(stats.byRole.find((r: { roleId: string }) => r.roleId === role.id).count).toBe(1);
    await waitForText(roleRow.getByRole("cell").nth(2), "1");
    const viewers = stats.byRole.find((r: { name: string }) => r.name === "viewer")?.count ?? 0;
    await waitForText(table.getByRole("row").filter({ hasText: "Reads everything" }).getByRole("cell").nth(2), String(viewers));
    await admin.screenshot("roles-list");

    // The member, through the API: what the role grants works, the rest is refused.
    const token = await service.bearer(member);
    expect((await service.api("GET", membersPath(), { key: null, token })).status).toBe(200);
    expect((await service.api("GET", "/api/v1/devices", { key: null, token })).status).toBe(200);
    expect((await service.api("PUT", `${membersPath()}/${member.id}/role`, { key: null, token, body: { roleId: role.id } })).status).toBe(403);
    expect((await service.api("GET", "/api/v1/invitations", { key: null, token })).status).toBe(403);
    expect((await service.api("GET", "/api/v1/roles", { key: null, token })).status).toBe(403);

    // The member in the console: the members list without its controls, and no tab it may not read.
    const restricted = await suite.open({ user: member });
    await restricted.goto("/members");
    await restricted.page.getByRole("table", { name: "Members" }).getByRole("row").filter({ hasText: member.email }).waitFor();
    expect(await writeControls(restricted.page)).toEqual([]);
    const tabs = restricted.page.getByRole("navigation", { name: "Members and roles" });
    expect(await tabs.getByRole("link").allTextContents()).toEqual(["Members"]);
    const nav = restricted.page.getByRole("navigation", { name: "Main" });
    await nav.getByRole("link", { name: "Devices" }).waitFor();
    expect(await nav.getByRole("link", { name: "Deployments" }).count()).toBe(0);
    expect(await nav.getByRole("link", { name: "API keys" }).count()).toBe(0);
    await restricted.screenshot("roles-restricted-member");

    // The role edited in the browser: roles:read added; the member reads roles on their next request.
    await admin.page.getByRole("button", { name: "Edit role member-reader" }).click();
    const edit = admin.page.getByRole("dialog", { name: "Edit role “member-reader”" });
    expect(await edit.getByRole("checkbox", { name: "devices:read", exact: true }).isChecked()).toBe(true);
    await edit.getByRole("checkbox", { name: "roles:read", exact: true }).check();
    await edit.getByRole("button", { name: "Save role" }).click();
    await edit.waitFor({ state: "hidden" });
    expect((await service.call("GET", `/api/v1/roles/${role.id}`)).permissions).toEqual(["devices:read", "members:read", "roles:read"]);
    expect((await service.api("GET", "/api/v1/roles", { key: null, token })).status).toBe(200);
    await restricted.goto("/members/roles");
    await restricted.page.getByRole("table", { name: "Roles" }).getByRole("row").filter({ hasText: "member-reader" }).waitFor();
    expect(await tabs.getByRole("link").allTextContents()).toEqual(["Members", "Roles"]);
    expect(await writeControls(restricted.page)).toEqual([]);
  }, 180_000);

  it("a viewer sees every page of Members & roles and API keys without a write control; an owner sees them", async () => {
    const viewer = await service.createUser("viewer", { name: "Vic Viewer" });
    // Something on every page: a pending invitation, a custom role, an API key.
    const viewerRole = (await service.call("GET", "/api/v1/roles?limit=200")).items.find((r: { name: string }) => r.name === "viewer");
    await service.call("POST", "/api/v1/invitations", { body: { email: "pending.person@console.test", roleId: viewerRole.id } });
    const custom = await service.api("POST", "/api/v1/roles", { body: { name: "auditor", permissions: ["audit:read"] } });
    expect(custom.status).toBe(201);
    const key = await service.call("POST", `/api/v1/organizations/${service.defaultOrg.id}/api-keys`, { body: { name: "viewer check key", permissions: ["devices:read"] } });
    service.rememberSecret(key.key);

    const ui = await suite.open({ user: viewer });
    for (const { path, loaded } of PAGES) {
      await ui.goto(path);
      await loaded(ui.page);
      await ui.settled();
      expect(await writeControls(ui.page), path).toEqual([]);
      await ui.audit();
    }
    await ui.screenshot("roles-viewer-api-keys");

    const owner = await suite.open({ user: ADMIN });
    const seen = new Set<string>();
    for (const { path, loaded } of PAGES) {
      await owner.goto(path);
      await loaded(owner.page);
      await owner.settled();
      for (const control of await writeControls(owner.page)) seen.add(control);
    }
    for (const expected of ["link /^Invite/", "button /^Invite/", "button /^Change role/", "button /^Remove/", "button /^Resend/", "button /^Revoke/", "button /^Create role$/", "button /^Edit role/", "button /^Delete role/", "button /^Create API key$/", "button /^Rotate/"]) {
      expect([...seen]).toContain(expected);
    }
  }, 180_000);
});
