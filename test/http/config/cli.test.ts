// `fleet diff -f DIR` and `fleet apply -f DIR` (docs/config-as-code.md, docs/cli.md) as a
// subprocess against a service: a directory of documents planned (nothing written), applied
// (stored, managed), planned again as unchanged; a refused document exits 2 naming file and
// line and changes nothing.
import { execFile } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";

const BIN = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../cli/bin/fleet.js");

let h: Harness;
let acme: Tenant;
let dir: string;

beforeAll(async () => {
  h = await createHarness();
  acme = await h.createTenant("Acme Config CLI");
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "fleet-config-cli-"));
  fs.mkdirSync(path.join(dir, "access"));
  fs.mkdirSync(path.join(dir, ".git")); // hidden folders are skipped
  fs.writeFileSync(path.join(dir, ".git", "ignored.yaml"), "not: a document\n");
  fs.writeFileSync(path.join(dir, "README.md"), "# not YAML, not read\n");
  fs.writeFileSync(path.join(dir, "access", "roles.yaml"), roles(["devices:read"]));
  fs.writeFileSync(path.join(dir, "registries.yml"), `apiVersion: fleet.app/v1
kind: OciRegistry
metadata: { name: images }
spec: { url: "https://registry.example.test", authType: BASIC, syncIntervalMinutes: 0 }
`);
});

afterAll(async () => {
  await h?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

function roles(permissions: string[]) {
  return `apiVersion: fleet.app/v1
kind: Role
metadata: { name: readers }
spec:
  permissions: [${permissions.join(", ")}]
`;
}

function fleet(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), "fleet-home-"));
  const env = { PATH: process.env.PATH ?? "", HOME: home, XDG_CONFIG_HOME: path.join(home, ".config"), FLEET_URL: h.url, FLEET_API_KEY: acme.key };
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { env }, (err, stdout, stderr) => {
      fs.rmSync(home, { recursive: true, force: true });
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

describe("fleet diff and apply", () => {
  it("diff shows what apply would do and writes nothing", async () => {
    const run = await fleet(["diff", "-f", dir, "-o", "table"]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain("+ create Role/readers (access/roles.yaml:1)");
    expect(run.stdout).toContain("+ create OciRegistry/images (registries.yml:1)  pending secret: credential");
    expect(run.stdout).toContain("Plan: 2 to create, 0 to update, 0 to delete, 0 unchanged");
    expect(await h.services.prisma.role.count({ where: { organizationId: acme.org.id } })).toBe(0);
  });

  it("apply stores them as managed; diff then finds nothing to do, and an edit shows its fields", async () => {
    const run = await fleet(["apply", "-f", dir, "--commit", "abcdef1", "-o", "table"]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain("Applied: 2 to create");
    const role = await h.services.prisma.role.findFirstOrThrow({ where: { organizationId: acme.org.id, name: "readers" } });
    expect(role).toMatchObject({ permissions: ["devices:read"], managedCommit: "abcdef1" });
    expect((await fleet(["diff", "-f", dir, "-o", "table"])).stdout).toContain("0 to create, 0 to update, 0 to delete, 2 unchanged");

    fs.writeFileSync(path.join(dir, "access", "roles.yaml"), roles(["devices:read", "alerts:read"]));
    const edited = await fleet(["diff", "-f", dir, "-o", "json"]);
    expect(edited.code, edited.stderr).toBe(0);
    const plan = JSON.parse(edited.stdout);
    expect(plan.resources.find((r: { kind: string }) => r.kind === "Role")).toMatchObject({
      action: "update", changes: [{ field: "permissions", old: ["devices:read"], new: ["alerts:read", "devices:read"] }],
    });
  });

  it("a refused document exits 2 naming the file and line, and nothing is applied", async () => {
    fs.writeFileSync(path.join(dir, "access", "bad.yaml"), "apiVersion: fleet.app/v1\nkind: Role\nmetadata: { name: broken }\nspec:\n  permissions: [nope:nothing]\n");
    const run = await fleet(["apply", "-f", dir]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("access/bad.yaml:5 Role \"broken\"");
    const role = await h.services.prisma.role.findFirstOrThrow({ where: { organizationId: acme.org.id, name: "readers" } });
    expect(role.permissions).toEqual(["devices:read"]); // the edit beside it was not applied either
    expect((await fleet(["diff", "-f", path.join(dir, "missing")])).code).toBe(2);
  });
});
