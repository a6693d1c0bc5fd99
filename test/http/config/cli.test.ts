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

function fleet(args: string[], key = acme.key): Promise<{ code: number; stdout: string; stderr: string }> {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), "fleet-home-"));
  const env = { PATH: process.env.PATH ?? "", HOME: home, XDG_CONFIG_HOME: path.join(home, ".config"), FLEET_URL: h.url, FLEET_API_KEY: key };
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

/** `count` Role documents named prefix-01, prefix-02, ... in one YAML stream. */
const fleetAs = (args: string[], key: string) => fleet(args, key);

function manyRoles(prefix: string, count: number): string {
  return Array.from({ length: count }, (_, i) => `apiVersion: fleet.app/v1\nkind: Role\nmetadata: { name: ${prefix}-${String(i + 1).padStart(2, "0")} }\nspec: { permissions: [devices:read] }\n`).join("---\n");
}

describe("fleet apply --prune: the prune guard, and --yes off a terminal", () => {
  let pruneDir: string;
  let beta: Tenant; // an organization of its own: a prune deletes whatever direct applies made there and no document declares
  const fleet = (args: string[]) => fleetAs(args, beta.key);
  const roleCount = () => h.services.prisma.role.count({ where: { organizationId: beta.org.id, name: { startsWith: "bulk-" } } });

  beforeAll(async () => {
    beta = await h.createTenant("Beta Prune CLI");
    pruneDir = fs.mkdtempSync(path.join(os.tmpdir(), "fleet-config-prune-"));
    fs.writeFileSync(path.join(pruneDir, "bulk.yaml"), manyRoles("bulk", 12));
    fs.writeFileSync(path.join(pruneDir, "keep.yaml"), manyRoles("bulk-keep", 1));
    const run = await fleet(["apply", "-f", pruneDir]);
    expect(run.code, run.stderr).toBe(0);
    expect(await roleCount()).toBe(13);
    fs.rmSync(path.join(pruneDir, "bulk.yaml")); // the file of 12 roles goes
  });
  afterAll(() => fs.rmSync(pruneDir, { recursive: true, force: true }));

  it("refuses a prune past the guard's limit (10, as a config source's), even with --yes: nothing is deleted", async () => {
    const run = await fleet(["apply", "-f", pruneDir, "--prune", "--yes", "-o", "table"]);
    expect(run.code).toBe(2);
    expect(run.stdout).toContain("! refused Role/bulk-01");
    expect(run.stdout).toContain("prune would delete 12 resources, more than the limit of 10");
    expect(run.stderr).toContain("nothing applied: 12 refused; the prune guard refused every deletion (nothing changed): --prune-limit N or --prune-percent P raises it, --no-prune-guard lifts it");
    const plan = await fleet(["diff", "-f", pruneDir, "--prune", "-o", "table"]);
    expect(plan.code).toBe(2);
    expect(plan.stdout).toContain("prune would delete 12 resources, more than the limit of 10");
    expect(plan.stderr).toContain("--no-prune-guard lifts it");
    // the share: 12 of the 13 resources direct applies manage here
    const share = await fleet(["apply", "-f", pruneDir, "--prune", "--prune-limit", "20", "--prune-percent", "50", "--yes", "-o", "table"]);
    expect(share.code).toBe(2);
    expect(share.stdout).toContain("prune would delete 12 of the 13 resources direct applies manage (92 %), more than its share of 50 %");
    expect(await roleCount()).toBe(13);
    expect((await fleet(["apply", "-f", pruneDir, "--prune", "--prune-limit", "lots"])).code).toBe(2);
  });

  it("off a terminal, a prune that deletes needs --yes: without it nothing is applied", async () => {
    const run = await fleet(["apply", "-f", pruneDir, "--prune", "--prune-limit", "20"]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("- delete Role/bulk-12");
    expect(run.stderr).toContain("apply --prune deleting 12 resources needs --yes when stdin is not a terminal");
    expect(await roleCount()).toBe(13);
  });

  it("deletes them with --yes once the guard allows it (--no-prune-guard), keeping what is still declared", async () => {
    const run = await fleet(["apply", "-f", pruneDir, "--prune", "--no-prune-guard", "--yes", "-o", "table"]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain("Applied: 0 to create, 0 to update, 12 to delete, 1 unchanged");
    expect(await h.services.prisma.role.findMany({ where: { organizationId: beta.org.id, name: { startsWith: "bulk-" } }, select: { name: true } })).toEqual([{ name: "bulk-keep-01" }]);
    const audit = await h.services.prisma.auditEntry.findFirstOrThrow({ where: { organizationId: beta.org.id, action: "config.apply" }, orderBy: { createdAt: "desc" } });
    expect(audit.changes).toMatchObject({ prune: true, delete: 12 });
  });
});

describe("fleet diff: a resource that exists and is not managed", () => {
  it("says `? exists, not managed`", async () => {
    const made = await h.api("POST", "/api/v1/roles", { key: acme.key, body: { name: "hand-made", permissions: ["devices:read"] } });
    expect(made.status, made.text).toBe(201);
    const file = path.join(dir, "..", `${path.basename(dir)}-hand-made.yaml`);
    fs.writeFileSync(file, "apiVersion: fleet.app/v1\nkind: Role\nmetadata: { name: hand-made }\nspec: { permissions: [devices:read] }\n");
    try {
      const run = await fleet(["diff", "-f", file, "-o", "table"]);
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout).toContain("? exists, not managed Role/hand-made");
      expect(run.stdout).not.toContain("unmanaged");
    } finally {
      fs.rmSync(file, { force: true });
    }
  });
});

describe("fleet config export", () => {
  it("takes the organization by name and writes one file per document into a folder that fleet diff -f plans as unchanged", async () => {
    const out = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "fleet-export-")), "fleet-config");
    try {
      const run = await fleet(["--org", acme.org.name, "config", "export", "-d", out]);
      expect(run.code, run.stderr).toBe(0);
      const files = run.stdout.trim().split("\n").map((f) => path.relative(out, f));
      expect(files).toEqual(expect.arrayContaining(["roles/readers.yaml", "roles/hand-made.yaml", "oci-registries/images.yaml"]));
      expect(fs.readFileSync(path.join(out, "roles", "readers.yaml"), "utf8")).toMatch(/^# managed by apply:owner@acme-config-cli\.example\.test[^\n]*\n+apiVersion: fleet\.app\/v1\nkind: Role\nmetadata:\n  name: readers\n/);
      const exported = await h.api("GET", `/api/v1/organizations/${acme.org.id}/config/export`, { key: acme.key });
      expect(files).toHaveLength(exported.body.count);
      // a folder ready for fleet diff: everything unchanged (the hand-made role not managed yet)
      const plan = await fleet(["diff", "-f", out, "-o", "json"]);
      expect(plan.code, plan.stderr).toBe(0);
      const summary = JSON.parse(plan.stdout).summary;
      expect(summary).toMatchObject({ create: 0, update: 0, delete: 0, refused: 0, exists_unmanaged: 1, unchanged: exported.body.count - 1 });
      // a folder with files in it is refused: a file left from before would be applied again
      const again = await fleet(["config", "export", "-d", out]);
      expect(again.code).toBe(2);
      expect(again.stderr).toContain("not an empty folder");
      // without -d: the YAML stream, as the service exports it
      const stream = await fleet(["--org", acme.org.slug, "config", "export"]);
      expect(stream.code, stream.stderr).toBe(0);
      expect(stream.stdout).toBe(exported.body.documents);
      expect((await fleet(["--org", "no-such-org", "config", "export"])).code).toBe(5);
    } finally {
      fs.rmSync(path.dirname(out), { recursive: true, force: true });
    }
  });
});
