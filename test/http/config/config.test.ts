// Fleet as code through HTTP (docs/config-as-code.md): the documents' JSON Schema; a plan that
// writes nothing; an apply of all six kinds through the modules' own rules, with owner marks,
// audit entries and "pending secret" for secrets the documents never hold; updates with their
// changed fields; the ownership guard (409 naming the owner, secrets still settable); a bad
// document refusing the whole apply with file and line; "exists, not managed" and adopt;
// prune off and on; another tenant never touched.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { importVersion } from "../deployments/support.js";
import { PARAMETERS_YAML } from "./support.js";

let h: Harness;
let acme: Tenant;
let globex: Tenant;
let appId: string;


beforeAll(async () => {
  h = await createHarness({ SMTP_URL: "smtp://127.0.0.1:2525" }); // e-mail targets need one configured; nothing is sent here
  acme = await h.createTenant("Acme Config");
  globex = await h.createTenant("Globex Config");
  appId = await importVersion(h, acme.org.id, { version: "1.0.0", parametersYaml: PARAMETERS_YAML });
  await importVersion(h, acme.org.id, { version: "1.1.0", parametersYaml: PARAMETERS_YAML });
});

afterAll(async () => {
  await h?.close();
});

const db = () => h.services.prisma;
const path = (t: Tenant, op: string) => `/api/v1/organizations/${t.org.id}/config/${op}`;
const plan = (t: Tenant, files: Array<{ path: string; content: string }>, extra: Record<string, unknown> = {}, key = t.key) =>
  h.api("POST", path(t, "plan"), { key, body: { files, ...extra } });
const apply = (t: Tenant, files: Array<{ path: string; content: string }>, extra: Record<string, unknown> = {}, key = t.key) =>
  h.api("POST", path(t, "apply"), { key, body: { files, ...extra } });
const byName = (res: { body: { resources: Array<{ kind: string; name: string }> } }, kind: string, name: string) =>
  res.body.resources.find((r) => r.kind === kind && r.name === name) as any;

function alertingYaml(threshold = 90) {
  return `apiVersion: fleet.app/v1
kind: NotificationTarget
metadata: { name: ops-hook }
spec:
  type: webhook
---
apiVersion: fleet.app/v1
kind: NotificationTarget
metadata: { name: ops-mail }
spec:
  type: email
  recipients: [ops@example.test]
  enabled: false
---
apiVersion: fleet.app/v1
kind: AlertRule
metadata:
  name: hot-cpu
spec:
  severity: critical
  labelSelector: { site: berlin }
  condition:
    type: metric_threshold
    metric: cpuUsagePercent
    operator: ">"
    threshold: ${threshold}
  targetIds: [ops-hook]
`;
}

function platformYaml(version = "1.0.0", poll = 60) {
  return `apiVersion: fleet.app/v1
kind: Role
metadata: { name: deployers }
spec:
  description: ships releases
  permissions: [deployments:read, deployments:write]
---
apiVersion: fleet.app/v1
kind: GitRegistry
metadata: { name: app-repo }
spec:
  url: https://git.example.test/apps.git
  branch: main
  authType: TOKEN
  syncIntervalMinutes: 0
---
apiVersion: fleet.app/v1
kind: OciRegistry
metadata: { name: images }
spec:
  url: https://registry.example.test
  repositories: [team/web, team/api]
  syncIntervalMinutes: 0
---
apiVersion: fleet.app/v1
kind: Deployment
metadata: { name: gateway-berlin }
spec:
  applicationId: ${appId}
  version: "${version}"
  profileId: compose-main
  parameters: { pollSeconds: ${poll} }
  target: { labelSelector: { site: berlin } }
  strategy: { type: all-at-once }
  retry: { maxAttempts: 3, initialDelaySeconds: 60, maxDelaySeconds: 600 }
`;
}

const files = (threshold = 90, version = "1.0.0", poll = 60) => [
  { path: "alerting/alerts.yaml", content: alertingYaml(threshold) },
  { path: "platform.yaml", content: platformYaml(version, poll) },
];

async function counts(organizationId: string) {
  const where = { organizationId };
  return {
    deployments: await db().deployment.count({ where }), rules: await db().alertRule.count({ where }), targets: await db().notificationTarget.count({ where }),
    roles: await db().role.count({ where }), git: await db().gitRegistry.count({ where }), oci: await db().ociRegistry.count({ where }),
  };
}

describe("documents", () => {
  it("publishes the documents' JSON Schema: the create inputs without name and secrets", async () => {
    const res = await h.api("GET", path(acme, "schema"), { key: acme.key });
    expect(res.status, res.text).toBe(200);
    const variants = res.body.oneOf as any[];
    expect(variants.map((v) => v.properties.kind.const).sort()).toEqual(["AlertRule", "ConfigLayer", "Deployment", "GitRegistry", "NotificationTarget", "OciRegistry", "Role"]);
    const deployment = variants.find((v) => v.title === "Deployment").properties.spec;
    expect(deployment.required).toEqual(expect.arrayContaining(["applicationId", "version", "profileId", "target"]));
    expect(deployment.properties.name).toBeUndefined();
    expect(Object.keys(deployment.properties)).toEqual(expect.arrayContaining(["retry", "maintenanceWindows", "disruptionBudget", "continuous", "startAt"]));
    expect(variants.find((v) => v.title === "GitRegistry").properties.spec.properties.credential).toBeUndefined();
    expect(variants.find((v) => v.title === "NotificationTarget").properties.spec.properties.secret).toBeUndefined();
    expect((await h.api("GET", path(acme, "schema"), { key: globex.key })).status).toBe(404);
  });

  it("refuses a document with the file and line of the field, and YAML that does not parse", async () => {
    const res = await plan(acme, [
      { path: "bad.yaml", content: "apiVersion: fleet.app/v1\nkind: AlertRule\nmetadata: { name: r1 }\nspec:\n  severity: bogus\n  condition: { type: deployment_failed }\n" },
      { path: "broken.yaml", content: "apiVersion: fleet.app/v1\nkind: Role\n  metadata: [\n" },
      { path: "kind.yaml", content: "apiVersion: fleet.app/v1\nkind: Device\nmetadata: { name: x }\nspec: {}\n" },
      { path: "secret.yaml", content: "apiVersion: fleet.app/v1\nkind: GitRegistry\nmetadata: { name: leaky }\nspec:\n  url: https://git.example.test/x.git\n  authType: TOKEN\n  credential: hunter2\n" },
    ]);
    expect(res.status, res.text).toBe(200);
    const refused = res.body.resources.filter((r: any) => r.action === "refused");
    expect(refused).toHaveLength(4);
    expect(refused.find((r: any) => r.file === "bad.yaml")).toMatchObject({ line: 5, kind: "AlertRule", name: "r1" });
    expect(refused.find((r: any) => r.file === "bad.yaml").message).toContain("severity");
    expect(refused.find((r: any) => r.file === "broken.yaml").message).toMatch(/YAML/);
    expect(refused.find((r: any) => r.file === "kind.yaml")).toMatchObject({ line: 2 });
    expect(refused.find((r: any) => r.file === "secret.yaml")).toMatchObject({ line: 7 });
    expect(refused.find((r: any) => r.file === "secret.yaml").message).toContain("credential: a secret is never written in a document");
  });
});

describe("plan and apply", () => {
  it("plans all six kinds as creations and writes nothing", async () => {
    const before = await counts(acme.org.id);
    const res = await plan(acme, files());
    expect(res.status, res.text).toBe(200);
    expect(res.body.applied).toBe(false);
    expect(res.body.summary).toMatchObject({ create: 7, refused: 0 });
    expect(byName(res, "GitRegistry", "app-repo")).toMatchObject({ action: "create", status: "pending secret", pendingSecrets: ["credential"], file: "platform.yaml", line: 8 });
    expect(byName(res, "NotificationTarget", "ops-hook")).toMatchObject({ status: "pending secret", pendingSecrets: ["url"] });
    expect(byName(res, "NotificationTarget", "ops-mail")).toMatchObject({ status: "in sync" });
    expect(await counts(acme.org.id)).toEqual(before);
  });

  it("applies them in one go: owner marks, the rule's target resolved by name, audited", async () => {
    const res = await apply(acme, files(), { commit: "0123abc" });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ applied: true, summary: { create: 7, refused: 0 } });
    expect(await counts(acme.org.id)).toEqual({ deployments: 1, rules: 1, targets: 2, roles: 1, git: 1, oci: 1 });

    const rule = await db().alertRule.findFirstOrThrow({ where: { organizationId: acme.org.id, name: "hot-cpu" }, include: { targets: true } });
    const hook = await db().notificationTarget.findFirstOrThrow({ where: { organizationId: acme.org.id, name: "ops-hook" } });
    expect(rule.targets.map((t) => t.targetId)).toEqual([hook.id]);
    expect(rule.managedCommit).toBe("0123abc");
    expect(rule.managedBy).toMatch(new RegExp(`^apply:${acme.user.email.replace(/[.]/g, "\\.")}`));
    const deployment = await h.api("GET", `/api/v1/deployments/${byName(res, "Deployment", "gateway-berlin").id}`, { key: acme.key });
    expect(deployment.body).toMatchObject({ status: "draft", version: "1.0.0", parameters: { pollSeconds: 60 }, retry: { maxAttempts: 3, initialDelaySeconds: 60, maxDelaySeconds: 600 } });
    const git = await db().gitRegistry.findFirstOrThrow({ where: { organizationId: acme.org.id } });
    expect(git).toMatchObject({ authType: "TOKEN", credentialSealed: null, managedCommit: "0123abc" });

    const audit = await db().auditEntry.findMany({ where: { organizationId: acme.org.id, action: "config.create" } });
    expect(audit.map((a) => a.entityType).sort()).toEqual(["AlertRule", "Deployment", "GitRegistry", "NotificationTarget", "NotificationTarget", "OciRegistry", "Role"]);
    expect(await db().auditEntry.count({ where: { organizationId: acme.org.id, action: "config.apply" } })).toBe(1);
  });

  it("plans the same documents again as unchanged", async () => {
    const res = await plan(acme, files());
    expect(res.status, res.text).toBe(200);
    expect(res.body.summary).toMatchObject({ unchanged: 7, create: 0, update: 0 });
  });

  it("plans an edit with its changed fields, old and new, and applies it through the modules' rules", async () => {
    const res = await plan(acme, files(95, "1.1.0", 120));
    expect(res.body.summary).toMatchObject({ update: 2, unchanged: 5 });
    expect(byName(res, "AlertRule", "hot-cpu").changes).toEqual([
      { field: "condition", old: expect.objectContaining({ threshold: 90 }), new: expect.objectContaining({ threshold: 95 }) },
    ]);
    expect(byName(res, "Deployment", "gateway-berlin").changes).toEqual([
      { field: "parameters", old: { pollSeconds: 60 }, new: { pollSeconds: 120 } },
      { field: "version", old: "1.0.0", new: "1.1.0" },
    ]);
    const applied = await apply(acme, files(95, "1.1.0", 120));
    expect(applied.status, applied.text).toBe(200);
    const deployment = await db().deployment.findFirstOrThrow({ where: { organizationId: acme.org.id, name: "gateway-berlin" } });
    expect(deployment).toMatchObject({ version: "1.1.0", parameters: { pollSeconds: 120 } });
    const rule = await db().alertRule.findFirstOrThrow({ where: { organizationId: acme.org.id, name: "hot-cpu" } });
    expect(rule.condition).toMatchObject({ threshold: 95 });
    expect(rule.managedCommit).toBeNull(); // this apply named no commit
  });

  it("a bad document refuses the whole apply with file and line, and nothing changes", async () => {
    const before = await db().alertRule.findFirstOrThrow({ where: { organizationId: acme.org.id, name: "hot-cpu" } });
    const bad = files(80);
    bad[1]!.content = bad[1]!.content.replace("profileId: compose-main", "profileId: compose-nope");
    const res = await apply(acme, bad);
    expect(res.status, res.text).toBe(400);
    expect(res.body.message).toMatch(/^Nothing applied: 1 document refused: platform\.yaml:\d+ Deployment "gateway-berlin": /);
    expect(res.body.message).toContain("profileId");
    const after = await db().alertRule.findFirstOrThrow({ where: { organizationId: acme.org.id, name: "hot-cpu" } });
    expect(after.condition).toEqual(before.condition);
    expect(after.updatedAt).toEqual(before.updatedAt);
  });
  it("refuses a secret parameter's value in a document, at its line", async () => {
    const f = files(95, "1.1.0", 120);
    f[1]!.content = f[1]!.content.replace("parameters: { pollSeconds: 120 }", "parameters:\n    pollSeconds: 120\n    apiToken: hunter2-hunter2");
    const res = await plan(acme, f);
    const refused = byName(res, "Deployment", "gateway-berlin");
    expect(refused).toMatchObject({ action: "refused", file: "platform.yaml", line: f[1]!.content.split("\n").findIndex((l) => l.includes("apiToken")) + 1 });
    expect(refused.message).toContain("parameters.apiToken: a secret parameter is never written in a document");
    expect(res.body.summary).toMatchObject({ refused: 1, unchanged: 6 });
  });
});

describe("ownership", () => {
  it("answers 409 naming the owner for changes and deletions of each kind through the API", async () => {
    const id = async (kind: "deployment" | "alertRule" | "notificationTarget" | "role" | "gitRegistry" | "ociRegistry") =>
      ((await (db()[kind] as any).findFirstOrThrow({ where: { organizationId: acme.org.id, managedBy: { not: null } } })) as { id: string }).id;
    const calls: Array<[string, string, unknown]> = [
      ["PATCH", `/api/v1/deployments/${await id("deployment")}`, { description: "by hand" }],
      ["DELETE", `/api/v1/deployments/${await id("deployment")}`, undefined],
      ["PATCH", `/api/v1/alert-rules/${await id("alertRule")}`, { severity: "info" }],
      ["DELETE", `/api/v1/alert-rules/${await id("alertRule")}`, undefined],
      ["PATCH", `/api/v1/notification-targets/${await id("notificationTarget")}`, { enabled: false }],
      ["DELETE", `/api/v1/notification-targets/${await id("notificationTarget")}`, undefined],
      ["PATCH", `/api/v1/roles/${await id("role")}`, { description: "by hand" }],
      ["DELETE", `/api/v1/roles/${await id("role")}`, undefined],
      ["PATCH", `/api/v1/registries/git/${await id("gitRegistry")}`, { branch: "dev" }],
      ["POST", `/api/v1/registries/git/${await id("gitRegistry")}/disable`, undefined],
      ["DELETE", `/api/v1/registries/git/${await id("gitRegistry")}`, undefined],
      ["PATCH", `/api/v1/registries/oci/${await id("ociRegistry")}`, { verifyTls: false }],
      ["DELETE", `/api/v1/registries/oci/${await id("ociRegistry")}`, undefined],
    ];
    for (const [method, url, body] of calls) {
      const res = await h.api(method, url, { key: acme.key, ...(body === undefined ? {} : { body }) });
      expect(res.status, `${method} ${url}: ${res.text}`).toBe(409);
      expect(res.body.message).toContain(`is managed as code by apply:${acme.user.email}`);
    }
    expect(await counts(acme.org.id)).toEqual({ deployments: 1, rules: 1, targets: 2, roles: 1, git: 1, oci: 1 });
    // another tenant's id stays a 404, not a 409 that would reveal it
    expect((await h.api("PATCH", `/api/v1/alert-rules/${await id("alertRule")}`, { key: globex.key, body: { severity: "info" } })).status).toBe(404);
  });

  it("lets the secrets a document never holds be set, and the status turns in sync", async () => {
    const git = await db().gitRegistry.findFirstOrThrow({ where: { organizationId: acme.org.id } });
    const set = await h.api("PATCH", `/api/v1/registries/git/${git.id}`, { key: acme.key, body: { credential: "tok-" + "x".repeat(20) } });
    expect(set.status, set.text).toBe(200);
    const hook = await db().notificationTarget.findFirstOrThrow({ where: { organizationId: acme.org.id, name: "ops-hook" } });
    expect((await h.api("PATCH", `/api/v1/notification-targets/${hook.id}`, { key: acme.key, body: { url: "http://127.0.0.1:9/hook" } })).status).toBe(200);
    const res = await plan(acme, files(95, "1.1.0", 120));
    expect(byName(res, "GitRegistry", "app-repo")).toMatchObject({ action: "unchanged", status: "in sync", pendingSecrets: [] });
    expect(byName(res, "NotificationTarget", "ops-hook")).toMatchObject({ action: "unchanged", status: "in sync" });
  });

  it("never takes over a resource the API manages unless adopt says so", async () => {
    const role = await h.api("POST", "/api/v1/roles", { key: acme.key, body: { name: "auditors", permissions: ["audit:read"] } });
    expect(role.status, role.text).toBe(201);
    const doc = [{ path: "roles.yaml", content: "apiVersion: fleet.app/v1\nkind: Role\nmetadata: { name: auditors }\nspec:\n  permissions: [audit:read, alerts:read]\n" }];
    const res = await apply(acme, doc);
    expect(res.status, res.text).toBe(200);
    expect(byName(res, "Role", "auditors")).toMatchObject({ action: "exists_unmanaged", managedBy: null });
    expect((await db().role.findUniqueOrThrow({ where: { id: role.body.id } })).permissions).toEqual(["audit:read"]);
    const adopted = await apply(acme, doc, { adopt: true });
    expect(byName(adopted, "Role", "auditors")).toMatchObject({ action: "update", changes: [{ field: "permissions", old: ["audit:read"], new: ["alerts:read", "audit:read"] }] });
    const stored = await db().role.findUniqueOrThrow({ where: { id: role.body.id } });
    expect(stored.permissions.sort()).toEqual(["alerts:read", "audit:read"]);
    expect(stored.managedBy).toMatch(/^apply:/);
  });
});

describe("prune", () => {
  it("keeps what the documents no longer hold unless prune is on, then deletes it through the module", async () => {
    const withoutRole = [files(95, "1.1.0", 120)[0]!, { path: "platform.yaml", content: platformYaml("1.1.0", 120).split("---\n").slice(1).join("---\n") }];
    const kept = await apply(acme, withoutRole, {});
    expect(kept.status, kept.text).toBe(200);
    expect(await db().role.count({ where: { organizationId: acme.org.id, name: "deployers" } })).toBe(1);
    const planned = await plan(acme, withoutRole, { prune: true });
    expect(planned.body.resources.filter((r: any) => r.action === "delete").map((r: any) => `${r.kind}/${r.name}`).sort()).toEqual(["Role/auditors", "Role/deployers"]);
    expect(await db().role.count({ where: { organizationId: acme.org.id, name: "deployers" } })).toBe(1);
    const pruned = await apply(acme, withoutRole, { prune: true });
    expect(pruned.status, pruned.text).toBe(200);
    expect(pruned.body.summary).toMatchObject({ delete: 2 });
    expect(await db().role.count({ where: { organizationId: acme.org.id, name: { in: ["deployers", "auditors"] } } })).toBe(0);
    expect(await db().deployment.count({ where: { organizationId: acme.org.id } })).toBe(1);
  });
});

describe("tenants", () => {
  it("another tenant's organization is a 404, and its own apply never touches this one's resources", async () => {
    expect((await apply(acme, files(), {}, globex.key)).status).toBe(404);
    expect((await plan(acme, files(), {}, globex.key)).status).toBe(404);
    expect((await h.api("GET", path(acme, "export"), { key: globex.key })).status).toBe(404);
    const before = await counts(acme.org.id);
    const res = await apply(globex, [files()[0]!]);
    expect(res.status, res.text).toBe(200);
    expect(res.body.summary).toMatchObject({ create: 3 });
    expect(await counts(acme.org.id)).toEqual(before);
    // acme's application id means nothing in globex: refused with the API's message
    const deployment = await plan(globex, [files()[1]!]);
    expect(byName(deployment, "Deployment", "gateway-berlin")).toMatchObject({ action: "refused" });
  });

  it("a viewer may plan but not apply", async () => {
    const viewer = await h.createKey(acme.org.id, ["*"], { role: "viewer" });
    const planned = await plan(acme, [files(95)[0]!], {}, viewer);
    expect(planned.status, planned.text).toBe(200);
    expect(planned.body.summary.refused).toBe(0);
    const applied = await apply(acme, [files(95)[0]!], {}, viewer);
    expect(applied.status).toBe(400);
    expect(applied.body.message).toContain("Missing permission alerts:write");
  });
});
