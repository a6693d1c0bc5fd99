// `--org` as a Super Admin (docs/cli.md, "Sign-in and contexts"): the CLI as a subprocess
// against a service, signed in with a password. An organization the admin sees but is not a
// member of is not entered by --org (that is the time-bound, audited tenant switch): the CLI
// says so and names the command, instead of the service's 404; once switched there, --org
// names it. The service's own 404 for it reads once ("not found among your memberships").
import { execFile } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADMIN_EMAIL, ADMIN_PASSWORD, createHarness, type Harness, type Tenant } from "../support/harness.js";
import { insertDevices } from "../http/agent/fleet-support.js";
import { ROOT } from "../support/server-process.js";

const BIN = path.join(ROOT, "cli", "bin", "fleet.js");

let h: Harness;
let demo: Tenant;
let home: string;

function fleet(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const env = { PATH: process.env.PATH ?? "", HOME: home, XDG_CONFIG_HOME: path.join(home, ".config"), FLEET_PASSWORD: ADMIN_PASSWORD };
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { env }, (err, stdout, stderr) => {
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

beforeAll(async () => {
  h = await createHarness();
  demo = await h.createTenant("Demo CLI");
  await insertDevices(h, demo.org.id, [{ name: "demo-device-1" }]);
  home = fs.mkdtempSync(path.join(os.tmpdir(), "fleet-cli-superadmin-"));
  const login = await fleet(["login", h.url, "--email", ADMIN_EMAIL, "--name", "local"]);
  expect(login.code, login.stderr).toBe(0);
});

afterAll(async () => {
  await h?.close();
  if (home) fs.rmSync(home, { recursive: true, force: true });
});

describe("fleet --org as a Super Admin", () => {
  it("refuses an organization the admin is not a member of, naming the tenant switch; the service's 404 says not found once", async () => {
    const run = await fleet(["--org", demo.org.slug, "devices", "list"]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(`you are not a member of ${demo.org.slug}: a Super Admin enters it with the time-bound, audited fleet tenant switch --organization-id ${demo.org.id}`);
    expect(run.stderr).not.toContain("not found");
    // the service's answer when asked anyway
    const direct = await fleet(["auth", "act-in", "--organization-id", demo.org.id]);
    expect(direct.code).toBe(5);
    expect(direct.stderr).toContain("Organization not found among your memberships");
    expect(direct.stderr).not.toMatch(/memberships not found/);
  });

  it("acts there by --org (slug or name) once switched into it", async () => {
    const enter = await fleet(["tenant", "switch", "--organization-id", demo.org.id, "--reason", "support ticket 7"]);
    expect(enter.code, enter.stderr).toBe(0);
    for (const name of [demo.org.slug, demo.org.name]) {
      const list = await fleet(["--org", name, "devices", "list", "-o", "json"]);
      expect(list.code, list.stderr).toBe(0);
      expect(JSON.parse(list.stdout).items.map((d: { name: string }) => d.name)).toEqual(["demo-device-1"]);
    }
    expect((await fleet(["tenant", "return"])).code).toBe(0);
    expect((await fleet(["--org", demo.org.slug, "devices", "list"])).code).toBe(2);
  });
});
