// Owner marks in the resources' own answers (docs/config-as-code.md, "Ownership"): every
// resource an apply created shows managedBy and managedCommit in its GET and in its list, for
// all six kinds; a resource created through the API shows null in both.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { importVersion } from "../deployments/support.js";
import { PARAMETERS_YAML } from "./support.js";

let h: Harness;
let acme: Tenant;
let appId: string;
let owner: string;
const COMMIT = "3f2a9c1";

const KINDS = [
  { kind: "Deployment", path: "/api/v1/deployments", managed: "gw-managed", unmanaged: "gw-by-hand" },
  { kind: "AlertRule", path: "/api/v1/alert-rules", managed: "rule-managed", unmanaged: "rule-by-hand" },
  { kind: "NotificationTarget", path: "/api/v1/notification-targets", managed: "target-managed", unmanaged: "target-by-hand" },
  { kind: "Role", path: "/api/v1/roles", managed: "role-managed", unmanaged: "role-by-hand" },
  { kind: "GitRegistry", path: "/api/v1/registries/git", managed: "git-managed", unmanaged: "git-by-hand" },
  { kind: "OciRegistry", path: "/api/v1/registries/oci", managed: "oci-managed", unmanaged: "oci-by-hand" },
] as const;

const spec = (kind: string): Record<string, unknown> => ({
  Deployment: { applicationId: appId, version: "1.0.0", profileId: "compose-main", parameters: { pollSeconds: 60 }, target: { labelSelector: { site: "berlin" } }, strategy: { type: "all-at-once" } },
  AlertRule: { condition: { type: "device_offline", durationSeconds: 600 } },
  NotificationTarget: { type: "webhook" },
  Role: { permissions: ["devices:read"] },
  GitRegistry: { url: "https://git.example.test/apps.git", branch: "main", syncIntervalMinutes: 0 },
  OciRegistry: { url: "https://registry.example.test", repositories: ["team/web"], syncIntervalMinutes: 0 },
})[kind]!;

const document = (kind: string, name: string) =>
  `apiVersion: fleet.app/v1\nkind: ${kind}\nmetadata: { name: ${name} }\nspec: ${JSON.stringify(spec(kind))}\n`;

beforeAll(async () => {
  h = await createHarness();
  acme = await h.createTenant("Acme Owner Marks");
  appId = await importVersion(h, acme.org.id, { version: "1.0.0", parametersYaml: PARAMETERS_YAML });
  const applied = await h.api("POST", `/api/v1/organizations/${acme.org.id}/config/apply`, {
    key: acme.key, body: { files: [{ path: "all.yaml", content: KINDS.map((k) => document(k.kind, k.managed)).join("---\n") }], commit: COMMIT },
  });
  expect(applied.status, applied.text).toBe(200);
  owner = applied.body.resources[0].managedBy;
  expect(owner).toMatch(/^apply:/);
  for (const k of KINDS) {
    const body = k.kind === "NotificationTarget" ? { name: k.unmanaged, type: "webhook", url: "https://hooks.example.test/x" } : { name: k.unmanaged, ...spec(k.kind) };
    const res = await h.api("POST", k.path, { key: acme.key, body });
    expect(res.status, `${k.kind}: ${res.text}`).toBe(201);
  }
});

afterAll(async () => {
  await h?.close();
});

describe("owner marks in the resources' answers", () => {
  it.each(KINDS)("$kind: the list and GET show the owner and commit of an applied resource, null for one the API created", async (k) => {
    const list = await h.api("GET", `${k.path}?limit=200`, { key: acme.key });
    expect(list.status, list.text).toBe(200);
    const items = list.body.items as Array<{ id: string; name: string; managedBy: string | null; managedCommit: string | null }>;
    const managed = items.find((i) => i.name === k.managed)!;
    const byHand = items.find((i) => i.name === k.unmanaged)!;
    expect(managed).toMatchObject({ managedBy: owner, managedCommit: COMMIT });
    expect(byHand).toMatchObject({ managedBy: null, managedCommit: null });

    const one = await h.api("GET", `${k.path}/${managed.id}`, { key: acme.key });
    expect(one.status, one.text).toBe(200);
    expect(one.body).toMatchObject({ name: k.managed, managedBy: owner, managedCommit: COMMIT });
    const other = await h.api("GET", `${k.path}/${byHand.id}`, { key: acme.key });
    expect(other.body).toMatchObject({ name: k.unmanaged, managedBy: null, managedCommit: null });
  });
});
