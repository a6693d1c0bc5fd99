// The ConfigLayer kind of fleet-as-code documents (docs/config-as-code.md, issue 48), synced
// from a Git smart-HTTP server on loopback: layers created with the source's owner mark, a new
// revision only when a document's content changed (its comment naming the source and commit),
// the API refusing changes but letting secrets through, secrets set through the API kept by
// later syncs, a secret in a document refused naming the field and line (nothing stored), and
// prune deleting a layer no document declares any more.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { startGitServer, type GitServer } from "../../support/git-server/index.js";

let h: Harness;
let git: GitServer;
let acme: Tenant;
let globex: Tenant;

const sources = (t: Tenant) => `/api/v1/organizations/${t.org.id}/config/sources`;

const defaults = `apiVersion: fleet.app/v1
kind: ConfigLayer
metadata: { name: defaults }
spec:
  kind: organization
  variables: { LOG_LEVEL: info }
`;
const berlin = (variables: string) => `apiVersion: fleet.app/v1
kind: ConfigLayer
metadata: { name: berlin }
spec:
  kind: selector
  selector: { site: berlin }
  order: 10
  variables: ${variables}
  files:
    - path: /etc/fleet/mqtt.conf
      content: "url={{ vars.MQTT_URL }}\\n"
  activation: { command: [systemctl, reload, mosquitto] }
`;
const MQTT = `{ MQTT_URL: "mqtt://{{ device.labels.site }}.example" }`;

const layer = (name: string) => h.services.prisma.configLayer.findFirst({
  where: { organizationId: acme.org.id, name }, include: { revisions: { orderBy: { revision: "desc" } } },
});

beforeAll(async () => {
  [h, git] = await Promise.all([createHarness(), startGitServer()]);
  acme = await h.createTenant("Acme Layers As Code");
  globex = await h.createTenant("Globex Layers As Code");
});

afterAll(async () => {
  await h?.close();
  await git?.close();
});

describe("ConfigLayer documents synced from Git", () => {
  it("creates, updates only on a content change, keeps API-set secrets, refuses a secret in a document, prunes", async () => {
    const { url, commit: first } = await git.createRepo("layers", { "layers.yaml": `${defaults}---\n${berlin(MQTT)}` });
    const created = await h.api("POST", sources(acme), { key: acme.key, body: { name: "layers", url, path: "/", prune: true } });
    expect(created.status, created.text).toBe(201);
    const id = created.body.id as string;

    const plan = await h.api("POST", `${sources(acme)}/${id}/plan`, { key: acme.key });
    expect(plan.body).toMatchObject({ summary: { create: 2, refused: 0 } });
    expect(await layer("berlin")).toBeNull();

    const synced = await h.api("POST", `${sources(acme)}/${id}/sync`, { key: acme.key });
    expect(synced.body, synced.text).toMatchObject({ status: "applied", summary: { create: 2 } });
    const made = (await layer("berlin"))!;
    expect(made).toMatchObject({ kind: "selector", order: 10, selector: { site: "berlin" }, currentRevision: 1, managedBy: "source:layers", managedCommit: first });
    expect(made.revisions[0]).toMatchObject({ comment: `applied as code by source:layers (commit ${first})`, activation: { command: ["systemctl", "reload", "mosquitto"] } });
    expect(made.revisions[0].files).toEqual([{ path: "/etc/fleet/mqtt.conf", content: "url={{ vars.MQTT_URL }}\n", template: true, mode: "0644" }]);

    // the API shows the owner and refuses changes, except for secrets (never in a document)
    const shown = await h.api("GET", `/api/v1/config-layers/${made.id}`, { key: acme.key });
    expect(shown.body).toMatchObject({ managedBy: "source:layers", managedCommit: first });
    const patched = await h.api("PATCH", `/api/v1/config-layers/${made.id}`, { key: acme.key, body: { variables: { MQTT_URL: "x" } } });
    expect(patched.status, patched.text).toBe(409);
    expect(patched.body.message).toContain('ConfigLayer "berlin" is managed as code by source:layers');
    expect((await h.api("DELETE", `/api/v1/config-layers/${made.id}`, { key: acme.key })).status).toBe(409);
    const secret = await h.api("PATCH", `/api/v1/config-layers/${made.id}`, { key: acme.key, body: { secrets: { BROKER_PASSWORD: "pw-4711" } } });
    expect(secret.status, secret.text).toBe(200);
    expect(secret.body).toMatchObject({ revision: 2, secretNames: ["BROKER_PASSWORD"] });

    // the same documents again: unchanged, no revision written
    const again = await h.api("POST", `${sources(acme)}/${id}/sync`, { key: acme.key });
    expect(again.body).toMatchObject({ status: "applied", summary: { unchanged: 2, update: 0 } });
    expect((await layer("berlin"))!.currentRevision).toBe(2);

    // a content change, taking in the secret set through the API: a new revision, the secret kept
    const { commit: second } = await git.commit("layers", {
      "layers.yaml": `${defaults}---\n${berlin(`{ MQTT_URL: "mqtt://{{ device.labels.site }}.example", DSN: "broker:{{ vars.BROKER_PASSWORD }}@db" }`)}`,
    });
    const replan = await h.api("POST", `${sources(acme)}/${id}/plan`, { key: acme.key });
    const byName = Object.fromEntries((replan.body.resources as Array<{ name: string }>).map((r) => [r.name, r]));
    expect(byName.berlin).toMatchObject({ action: "update", changes: [{ field: "variables" }] });
    expect(byName.defaults).toMatchObject({ action: "unchanged" });
    const updated = await h.api("POST", `${sources(acme)}/${id}/sync`, { key: acme.key });
    expect(updated.body).toMatchObject({ status: "applied", summary: { update: 1, unchanged: 1 } });
    const now = (await layer("berlin"))!;
    expect(now).toMatchObject({ currentRevision: 3, managedCommit: second });
    expect(now.revisions[0]).toMatchObject({ revision: 3, secretNames: ["BROKER_PASSWORD"], comment: `applied as code by source:layers (commit ${second})` });
    expect(JSON.parse(h.services.secrets.decrypt(now.revisions[0].secretsSealed!))).toEqual({ BROKER_PASSWORD: "pw-4711" });
    expect((await layer("defaults"))!.currentRevision).toBe(1);

    // a secret in a document: refused at its line, nothing changes
    await git.commit("layers", {
      "leaky.yaml": "apiVersion: fleet.app/v1\nkind: ConfigLayer\nmetadata: { name: leaky }\nspec:\n  kind: selector\n  selector: { tier: pilot }\n  order: 20\n  secrets:\n    TOKEN: plain-text\n",
    });
    const refused = await h.api("POST", `${sources(acme)}/${id}/sync`, { key: acme.key });
    expect(refused.body.status).toBe("refused");
    expect(refused.body.message).toContain("leaky.yaml:9");
    expect(refused.body.message).toContain("secrets: a secret is never written in a document");
    expect(await layer("leaky")).toBeNull();
    expect(JSON.stringify(refused.body)).not.toContain("plain-text");

    // prune: berlin no longer declared (the bad file gone too)
    await git.commit("layers", { "layers.yaml": defaults }, { remove: ["leaky.yaml"] });
    const pruned = await h.api("POST", `${sources(acme)}/${id}/sync`, { key: acme.key });
    expect(pruned.body).toMatchObject({ status: "applied", summary: { delete: 1, unchanged: 1 } });
    expect(await layer("berlin")).toBeNull();
    expect(await layer("defaults")).not.toBeNull();
  });
});

describe("ConfigLayer documents applied directly", () => {
  it("answers 400 naming the field and line of a secret, storing nothing; another tenant's layers are not touched", async () => {
    const apply = (t: Tenant, content: string) =>
      h.api("POST", `/api/v1/organizations/${t.org.id}/config/apply`, { key: t.key, body: { files: [{ path: "site.yaml", content }] } });
    const leaky = "apiVersion: fleet.app/v1\nkind: ConfigLayer\nmetadata: { name: munich }\nspec:\n  kind: selector\n  selector: { site: munich }\n  order: 5\n  secrets: { API_TOKEN: t0ken }\n";
    const res = await apply(acme, leaky);
    expect(res.status, res.text).toBe(400);
    expect(res.body.message).toBe('Nothing applied: 1 document refused: site.yaml:8 ConfigLayer "munich": Invalid input: secrets: a secret is never written in a document; set it through the API once the resource exists');
    expect(await layer("munich")).toBeNull();

    // a bad file path: the API's own message with the field's line
    const badPath = await apply(acme, "apiVersion: fleet.app/v1\nkind: ConfigLayer\nmetadata: { name: munich }\nspec:\n  kind: organization\n  files:\n    - path: etc/relative\n      content: x\n");
    expect(badPath.status, badPath.text).toBe(400);
    expect(badPath.body.message).toMatch(/site\.yaml:7 ConfigLayer "munich": .*files\.0\.path.*must be absolute/);

    const ok = await apply(globex, leaky.replace(/ {2}secrets.*\n/, "  variables: { SITE: munich }\n"));
    expect(ok.status, ok.text).toBe(200);
    expect(await layer("munich")).toBeNull();
    expect(await h.services.prisma.configLayer.count({ where: { organizationId: globex.org.id, name: "munich", managedBy: { startsWith: "apply:" } } })).toBe(1);

    const exported = await h.api("GET", `/api/v1/organizations/${globex.org.id}/config/export`, { key: globex.key });
    expect(exported.body.documents).toContain("kind: ConfigLayer");
    const roundTrip = await h.api("POST", `/api/v1/organizations/${globex.org.id}/config/plan`, { key: globex.key, body: { files: [{ path: "export.yaml", content: exported.body.documents }] } });
    expect(roundTrip.body.summary).toMatchObject({ unchanged: 1, update: 0, create: 0 });
  });
});
