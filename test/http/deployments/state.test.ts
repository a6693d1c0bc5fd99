// A deployment's one state (deployment-state.ts) through HTTP: the API answers `state` beside
// the spec's `status` (unchanged: an aborted rollout's deployment stays `running`, in its
// devices' desired state), the list filters on it (`state`, `inProgress`) by the same table,
// over every stored combination of status × rollout state × scheduled start, and a real
// staged rollout aborted and an all-at-once one completed answer what they are (through the
// MCP tools too).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import type { EnrolledDevice } from "../agent/fleet-support.js";
import { DEPLOYMENT_STATES, IN_PROGRESS_STATES, deploymentState } from "../../../src/modules/deployments/deployment-state.js";
import { ROLLOUT_STATES } from "../../../src/modules/deployments/rollout-moves.js";
import { DEPLOYMENT_STATUSES } from "../../../src/modules/deployments/schemas.js";
import { agentHeartbeat, enrollFleet, importVersion } from "./support.js";
import { answerOf, mcpClient, toolNamed } from "../mcp/mcp-support.js";

let h: Harness;
let acme: Tenant;
let appId: string;
let devices: EnrolledDevice[];

beforeAll(async () => {
  h = await createHarness();
  acme = await h.createTenant("Acme State");
  appId = await importVersion(h, acme.org.id, { version: "1.0.0" });
  devices = await enrollFleet(h, acme.key, 3, { labels: { site: "state" } });
});

afterAll(async () => {
  await h?.close();
});

async function create(name: string, strategy: Record<string, unknown> = { type: "all-at-once" }): Promise<string> {
  const res = await h.api("POST", "/api/v1/deployments", {
    key: acme.key,
    body: { name, applicationId: appId, version: "1.0.0", profileId: "compose-main", parameters: { apiToken: "tok-state" }, target: { labelSelector: { site: "state" } }, strategy },
  });
  expect(res.status, res.text).toBe(201);
  expect(res.body).toMatchObject({ status: "draft", state: "draft" });
  return res.body.id as string;
}

const get = async (id: string) => (await h.api("GET", `/api/v1/deployments/${id}`, { key: acme.key })).body;
const listIds = async (query: string): Promise<string[]> => {
  const res = await h.api("GET", `/api/v1/deployments?limit=200&${query}`, { key: acme.key });
  expect(res.status, res.text).toBe(200);
  return res.body.items.map((d: { id: string }) => d.id);
};

describe("the deployment's state in the API", () => {
  it("a staged rollout: rolling out after the start, aborted after an abort while its status stays running", async () => {
    const id = await create("staged-aborted", { type: "staged", canary: { count: 1 }, batches: [{ percent: 100 }] });
    const started = await h.api("POST", `/api/v1/deployments/${id}/start`, { key: acme.key });
    expect(started.body).toMatchObject({ status: "running", rolloutState: "canary", state: "rolling_out" });
    expect(await listIds("inProgress=true")).toContain(id);
    const aborted = await h.api("POST", `/api/v1/deployments/${id}/rollout/abort`, { key: acme.key, body: {} });
    expect(aborted.status, aborted.text).toBe(200);
    expect(await get(id)).toMatchObject({ status: "running", rolloutState: "aborted", state: "aborted" });
    expect(await listIds("inProgress=true")).not.toContain(id);
    expect(await listIds("state=aborted")).toContain(id);
    expect(await listIds("inProgress=false")).toContain(id);
    // a device's deployments say the same of it
    const ofDevice = await h.api("GET", `/api/v1/devices/${devices[0].deviceId}/deployments?limit=100`, { key: acme.key });
    expect(ofDevice.body.items.find((e: { deploymentId: string }) => e.deploymentId === id)).toMatchObject({ deploymentStatus: "running", deploymentState: "aborted" });
    // the MCP tools are made from the same procedures: the same state, and the same filter
    const client = await mcpClient(h.url, { "x-api-key": acme.key });
    try {
      const { tools } = await client.listTools();
      expect(Object.keys((toolNamed(tools, "deployments_list").inputSchema as { properties: object }).properties)).toEqual(expect.arrayContaining(["state", "inProgress"]));
      expect(answerOf(await client.callTool({ name: "deployments_get", arguments: { id } }))).toMatchObject({ status: "running", state: "aborted" });
      const listed = answerOf(await client.callTool({ name: "deployments_list", arguments: { state: "aborted" } }));
      expect(listed.items.map((d: { id: string }) => d.id)).toContain(id);
    } finally {
      await client.close();
    }
  });

  it("an all-at-once deployment: completed once its devices report, stopping and stopped after a stop", async () => {
    const id = await create("all-completed");
    expect((await h.api("POST", `/api/v1/deployments/${id}/start`, { key: acme.key })).body).toMatchObject({ state: "rolling_out" });
    for (const device of devices) await agentHeartbeat(h, device, [{ deploymentId: id, state: "running" }]);
    expect(await get(id)).toMatchObject({ status: "running", rolloutState: "completed", state: "completed" });
    expect(await listIds("state=completed")).toContain(id);
    expect(await listIds("inProgress=true")).not.toContain(id);
    const stopped = await h.api("POST", `/api/v1/deployments/${id}/stop`, { key: acme.key, body: {} });
    expect(stopped.body).toMatchObject({ status: "stopping", state: "stopping" });
    for (const device of devices) await agentHeartbeat(h, device, [{ deploymentId: id, state: "removed" }]);
    expect(await get(id)).toMatchObject({ status: "stopped", state: "stopped", progress: expect.objectContaining({ removed: 3 }) });
  });

  it("answers the computed state for every stored combination, and the list's filters select by it", async () => {
    // one draft per combination, moved to it in the database (most of them no move reaches: the table covers them anyway)
    const combos = DEPLOYMENT_STATUSES.flatMap((status) => ROLLOUT_STATES.flatMap((rolloutState) => [null, new Date("2030-01-01T00:00:00Z")].map((startAt) => ({ status, rolloutState, startAt }))));
    const ids = await Promise.all(combos.map((_, i) => create(`combo-${i}`)));
    await h.services.prisma.$transaction(combos.map((c, i) => h.services.prisma.deployment.update({ where: { id: ids[i] }, data: c })));
    const expected = new Map(combos.map((c, i) => [ids[i], deploymentState(c)]));
    const page = await h.api("GET", "/api/v1/deployments?search=combo-&limit=200", { key: acme.key });
    expect(page.body.total).toBe(combos.length);
    for (const item of page.body.items as Array<{ id: string; status: string; state: string }>) expect(item.state, item.id).toBe(expected.get(item.id));
    for (const state of DEPLOYMENT_STATES) {
      const selected = await listIds(`search=combo-&state=${state}`);
      expect(selected.sort(), state).toEqual(ids.filter((id) => expected.get(id) === state).sort());
    }
    const inProgress = await listIds("search=combo-&inProgress=true");
    expect(inProgress.sort()).toEqual(ids.filter((id) => IN_PROGRESS_STATES.includes(expected.get(id)!)).sort());
    const others = await listIds("search=combo-&inProgress=false");
    expect(others.length + inProgress.length).toBe(combos.length);
    const bad = await h.api("GET", "/api/v1/deployments?state=running", { key: acme.key });
    expect(bad.status).toBe(400);
    expect(bad.text).toContain("state");
  });
});
