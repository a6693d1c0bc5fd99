// The whole console walked as a viewer, an operator and an administrator: every area the
// sidebar offers them, and the pages under those areas. On each page the controls that change
// something (found by accessible name, as a person looks for them) are there exactly when the
// person holds the write permission the API checks for that page, so the console and the API
// never disagree: a viewer meets no write control anywhere, an operator meets them in the
// fleet and software but not among people and keys, an administrator everywhere.
import { beforeAll, describe, expect, it } from "vitest";
import type { Page } from "playwright-core";
import { peerAvailable } from "../../support/peers.js";
import { type ConsoleService, type SimulatedFleet, type User } from "../../support/console-service.js";
import { consoleSuite } from "../../support/browser.js";
import { grants, SYSTEM_ROLES, type Permission } from "../../../src/trpc/permissions.js";

let service: ConsoleService;
let fleet: SimulatedFleet;

/** Names that only a control which changes something carries. */
const WRITE_NAME = /^(Add|Create|New|Invite|Generate|Upload|Import|Edit|Rename|Save|Change|Delete|Remove|Revoke|Rotate|Resend|Renew|Retire|Make default|Enable|Disable|Suspend|Restore|Sync|Enroll|Release|Roll back|Start|Acknowledge|Resolve|Send test|Set up|Select)\b/i;

/** The write controls a page shows: buttons, links, checkboxes and switches, by accessible name. */
async function writeControls(page: Page): Promise<string[]> {
  const found: string[] = [];
  for (const role of ["button", "link", "checkbox", "switch"] as const) {
    for (const name of await page.getByRole(role, { name: WRITE_NAME }).evaluateAll((els) => els.map((el) => el.getAttribute("aria-label") ?? el.textContent ?? ""))) {
      found.push(`${role} "${name.trim().replace(/\s+/g, " ")}"`);
    }
  }
  return found;
}

/**
 * Pages and the permission whose holder gets write controls there (the API's key for the
 * page's writes; a list: all of them); `null`: a read-only page. `mayBeEmpty`: with this test's
 * data a holder may see none (its lists are empty), but someone without the permission never sees one.
 */
function pages(deviceId: string): { path: string; write: Permission | Permission[] | null; mayBeEmpty?: true }[] {
  return [
    { path: "/", write: "enrollment:write", mayBeEmpty: true },
    { path: "/devices", write: "devices:write" },
    { path: `/devices/${deviceId}`, write: "devices:write" },
    { path: "/enrollment-tokens", write: "enrollment:write" },
    { path: "/enrollment-requests", write: "enrollment:write", mayBeEmpty: true },
    { path: "/groups?key=site", write: "deployments:write" },
    { path: "/jobs", write: "actions:write" },
    { path: "/applications", write: "applications:write", mayBeEmpty: true },
    { path: "/deployments", write: "deployments:write" },
    // a config source applies every kind it holds: managing one takes the write permission of each
    { path: "/config", write: ["deployments:write", "alerts:write", "roles:write", "registries:write"] },
    { path: "/config-layers", write: "config:write" },
    { path: "/marketplace", write: "registries:write", mayBeEmpty: true },
    { path: "/registries", write: "registries:write" },
    { path: "/alerts", write: "alerts:write", mayBeEmpty: true },
    { path: "/alerts/rules", write: "alerts:write" },
    { path: "/notification-targets", write: "alerts:write" },
    { path: "/certificates", write: "certificates:write" },
    { path: "/audit", write: null },
    { path: "/members", write: "members:write" },
    { path: "/members/invitations", write: "invitations:write" },
    { path: "/members/roles", write: "roles:write" },
    { path: "/api-keys", write: "api-keys:write" },
    { path: "/organization", write: "organizations:write" },
  ];
}

const permissionsOf = (role: string) => SYSTEM_ROLES.find((r) => r.name === role)!.permissions;
const mayWrite = (held: Iterable<string>, write: Permission | Permission[]) => [write].flat().every((p) => grants(held, p));

describe.skipIf(!peerAvailable("chromium"))("console walked per role", () => {
  const suite = consoleSuite();
  const people: Record<"viewer" | "operator" | "admin", User> = {} as never;

  beforeAll(async () => {
    service = suite.service;
    fleet = await service.enrollFleet({ prefix: "walk", devices: 2, labels: { site: "oslo" } });
    for (const role of ["viewer", "operator", "admin"] as const) people[role] = await service.createUser(role);
  }, 120_000);

  for (const role of ["viewer", "operator", "admin"] as const) {
    it(`${role}: write controls exactly where the role may write`, async () => {
      const held = permissionsOf(role);
      const ui = await suite.open({ user: people[role] });
      await ui.goto("/");
      // The sidebar offers the areas the role may read, and never the Platform section.
      const nav = ui.page.getByRole("navigation", { name: "Main" });
      await nav.waitFor();
      const areas = await nav.getByRole("link").evaluateAll((els) => els.map((el) => el.getAttribute("href")));
      expect(areas).not.toContain("/platform/users");
      const seen: Record<string, string[]> = {};
      for (const { path, write, mayBeEmpty } of pages(fleet.devices[0].deviceId!)) {
        await ui.goto(path); // (settled and audited with axe there)
        await ui.page.getByRole("heading", { level: 1 }).first().waitFor();
        await ui.settled();
        const controls = await writeControls(ui.page);
        seen[path] = controls;
        if (write === null || !mayWrite(held, write)) expect(controls, `${role} on ${path}`).toEqual([]);
        else if (!mayBeEmpty) expect(controls.length, `${role} on ${path}: ${write} should offer a write control`).toBeGreaterThan(0);
      }
      // Every area in the sidebar was walked.
      for (const href of areas) expect(Object.keys(seen).some((p) => p.split("?")[0] === href), `${href} walked`).toBe(true);
      await ui.screenshot(`role-walk-${role}`);
    }, 300_000);
  }
});
