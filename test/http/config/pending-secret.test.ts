// A Deployment document whose version declares a required secret parameter (issue 33: "a
// resource whose secret is missing shows that in its status instead of failing the sync"):
// the apply creates it as a draft "pending secret" naming the parameter; it cannot start (409
// naming it); its secret is set through POST /deployments/{id}/secret-parameters, the one route
// open for a deployment managed as code (PATCH stays refused); then it is "in sync", starts,
// and the device gets the secret. Refusals: a parameter that is not secret (400 naming it),
// another organization's deployment (404).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import type { EnrolledDevice } from "../agent/fleet-support.js";
import { agentHeartbeat, enrollFleet, importVersion } from "../deployments/support.js";
import { deploymentDocument } from "./support.js";

let h: Harness;
let acme: Tenant;
let globex: Tenant;
let appId: string;
let device: EnrolledDevice;
const TOKEN = "tok-" + "pending".repeat(3);

beforeAll(async () => {
  h = await createHarness();
  acme = await h.createTenant("Acme Pending Secret");
  globex = await h.createTenant("Globex Pending Secret");
  appId = await importVersion(h, acme.org.id, { version: "1.0.0" }); // apiToken: secret, required
  [device] = await enrollFleet(h, acme.key, 1, { labels: { site: "lyon" } });
}, 120_000);

afterAll(async () => {
  await h?.close();
});

const doc = (poll: number) => deploymentDocument("lyon-gateway", appId, "1.0.0", [`parameters: { pollSeconds: ${poll} }`, "target: { labelSelector: { site: lyon } }"]);
const apply = (poll: number) =>
  h.api("POST", `/api/v1/organizations/${acme.org.id}/config/apply`, { key: acme.key, body: { files: [{ path: "lyon.yaml", content: doc(poll) }] } });
const entryOf = (res: { body: { resources: Array<{ name: string }> } }) => res.body.resources.find((r) => r.name === "lyon-gateway");

describe("a Deployment document without its required secret", () => {
  let id: string;

  it("is created as a draft, pending secret (the parameter named), instead of failing the apply", async () => {
    const res = await apply(45);
    expect(res.status, res.text).toBe(200);
    expect(entryOf(res)).toMatchObject({ action: "create", status: "pending secret", pendingSecrets: ["parameters.apiToken"] });
    const stored = await h.services.prisma.deployment.findFirstOrThrow({ where: { organizationId: acme.org.id, name: "lyon-gateway" } });
    expect(stored).toMatchObject({ status: "draft", secretParameterNames: [], parameters: { pollSeconds: 45 } });
    expect(stored.managedBy).toMatch(/^apply:/);
    id = stored.id;
  });

  it("cannot start: 409 naming the secret; a document change still applies and stays pending secret", async () => {
    const start = await h.api("POST", `/api/v1/deployments/${id}/start`, { key: acme.key });
    expect(start.status, start.text).toBe(409);
    expect(start.body.message).toContain("the required secret parameter apiToken has no value yet (pending secret)");
    const changed = await apply(60);
    expect(changed.status, changed.text).toBe(200);
    expect(entryOf(changed)).toMatchObject({ action: "update", status: "pending secret", changes: [{ field: "parameters" }] });
    expect(await agentHeartbeat(h, device)).toEqual([]);
  });

  it("PATCH stays refused for a managed deployment; the secret-parameters route is open: a non-secret name is 400, another tenant 404", async () => {
    const patch = await h.api("PATCH", `/api/v1/deployments/${id}`, { key: acme.key, body: { parameters: { apiToken: TOKEN, pollSeconds: 60 } } });
    expect(patch.status).toBe(409);
    expect(patch.body.message).toContain("managed as code");
    const plain = await h.api("POST", `/api/v1/deployments/${id}/secret-parameters`, { key: acme.key, body: { parameters: { pollSeconds: 10 } } });
    expect(plain.status, plain.text).toBe(400);
    expect(plain.body.message).toContain("parameters.pollSeconds: not a secret parameter");
    const foreign = await h.api("POST", `/api/v1/deployments/${id}/secret-parameters`, { key: globex.key, body: { parameters: { apiToken: TOKEN } } });
    expect(foreign.status).toBe(404);

    const set = await h.api("POST", `/api/v1/deployments/${id}/secret-parameters`, { key: acme.key, body: { parameters: { apiToken: TOKEN } } });
    expect(set.status, set.text).toBe(200);
    expect(set.body).toMatchObject({ status: "draft", secretParameterNames: ["apiToken"], parameters: { pollSeconds: 60, apiToken: "********" } });
    expect(set.text).not.toContain(TOKEN);
    const audit = await h.services.prisma.auditEntry.findFirstOrThrow({ where: { organizationId: acme.org.id, entityId: id, outcome: "success" }, orderBy: { createdAt: "desc" } });
    expect(audit.changes).toEqual({ parameters: ["apiToken"] }); // the name only
  });

  it("then it is in sync, starts, and the device gets the secret with the document's values", async () => {
    const again = await apply(60);
    expect(entryOf(again)).toMatchObject({ action: "unchanged", status: "in sync", pendingSecrets: [] });
    const start = await h.api("POST", `/api/v1/deployments/${id}/start`, { key: acme.key });
    expect(start.status, start.text).toBe(200);
    const desired = await agentHeartbeat(h, device);
    expect(desired.map((d) => [d.deploymentId, d.action, d.version])).toEqual([[id, "install", "1.0.0"]]);
    expect(desired[0].parameters).toEqual({ gateway: { API_TOKEN: TOKEN, POLL_SECONDS: 60, MODE: "fast" } });
  });
});
