// Fleet as code, a version bump in Git (issue 33): a config source's staged Deployment 1.0.0 is
// started and completes on simulated devices (the simulator's agent against a real service);
// a pushed commit bumps it to 1.1.0; the sync plans it as an update (version 1.0.0 -> 1.1.0)
// and its apply starts the update rollout: the canary first (the other devices still run
// 1.0.0), then, approved, the rest; every simulated device ends running 1.1.0 and the stored
// deployment shows 1.1.0 with the new commit in its owner mark. The rollout job's tick is
// called by the test while it polls (no schedule runs in the harness).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { startGitServer, type GitServer } from "../../support/git-server/index.js";
import { createEnrollmentToken, ensureCa } from "../agent/fleet-support.js";
import { FleetSimulator } from "../../../src/simulator/engine.js";
import { judgeDeploymentsInFlight } from "../../../src/modules/deployments/jobs.js";
import { importVersion, until } from "../deployments/support.js";
import { deploymentDocument, PARAMETERS_YAML } from "./support.js";

let h: Harness;
let git: GitServer;
let acme: Tenant;
let appId: string;
let simulator: FleetSimulator;
const DEVICES = 4;

beforeAll(async () => {
  [h, git] = await Promise.all([createHarness({ RATE_LIMIT_PER_SOURCE: "0", RATE_LIMIT_PER_CREDENTIAL: "0" }), startGitServer()]);
  acme = await h.createTenant("Acme GitOps Upgrade");
  await ensureCa(h, acme.key);
  appId = await importVersion(h, acme.org.id, { version: "1.0.0", parametersYaml: PARAMETERS_YAML });
  await importVersion(h, acme.org.id, { version: "1.1.0", parametersYaml: PARAMETERS_YAML });
  const token = await createEnrollmentToken(h, acme.key, { labels: { line: "press" }, maxUses: DEVICES });
  simulator = new FleetSimulator({
    url: h.url, enrollmentToken: token.token, devices: DEVICES, heartbeatMs: 300, busyHeartbeatMs: 100, telemetryMs: 0,
    failureRate: 0, deploymentFailureRate: 0, timeScale: 0.01, idPrefix: "gitops-upgrade", enrollConcurrency: 4, maxSockets: 4,
  });
  await simulator.enrollAll();
  expect(simulator.stats(), simulator.stats().lastError ?? "").toMatchObject({ enrolled: DEVICES, enrollFailed: 0 });
  simulator.startTraffic();
}, 120_000);

afterAll(async () => {
  await simulator?.stop();
  await h?.close();
  await git?.close();
});

const deploymentYaml = (version: string) =>
  deploymentDocument("press-gateway", appId, version, [
    "parameters: { pollSeconds: 30 }",
    "target: { labelSelector: { line: press } }",
    "strategy: { type: staged, canary: { count: 1 }, batches: [], successThreshold: 100, autoAdvance: false }",
  ]);

const sources = `/api/v1/organizations/${"ORG"}/config/sources`;
const base = () => sources.replace("ORG", acme.org.id);
const rollout = async (id: string) => (await h.api("GET", `/api/v1/deployments/${id}/rollout`, { key: acme.key })).body;

/** Polls the rollout status, ticking the rollout job, until `done` holds. */
function tickUntil(id: string, done: (status: { state: string }) => boolean, what: string) {
  return until(async () => {
    await judgeDeploymentsInFlight(h.services);
    const status = await rollout(id);
    return done(status) ? status : undefined;
  }, what, 60_000);
}

/** The versions the simulated devices run (each device: its application's install entries that are running). */
const runningVersions = () =>
  simulator.devices.map((d) => d.deployments.list().filter((x) => x.applicationId === appId && x.action === "install" && x.state === "running").map((x) => x.version).join(","));

describe("a version bump pushed to Git", () => {
  let sourceId: string;
  let id: string;

  it("the source's staged 1.0.0 deployment is started and completes on the simulated devices", async () => {
    await git.createRepo("fleet", { "fleet/press.yaml": deploymentYaml("1.0.0") });
    const created = await h.api("POST", base(), { key: acme.key, body: { name: "main", url: `${git.url}/fleet.git`, branch: "main", path: "fleet" } });
    expect(created.status, created.text).toBe(201);
    sourceId = created.body.id;
    const synced = await h.api("POST", `${base()}/${sourceId}/sync`, { key: acme.key });
    expect(synced.body).toMatchObject({ status: "applied", summary: { create: 1 } });
    id = (await h.services.prisma.deployment.findFirstOrThrow({ where: { organizationId: acme.org.id, name: "press-gateway" } })).id;
    const started = await h.api("POST", `/api/v1/deployments/${id}/start`, { key: acme.key });
    expect(started.status, started.text).toBe(200);
    await tickUntil(id, (s) => s.state === "awaiting_approval", "the canary of 1.0.0");
    expect((await h.api("POST", `/api/v1/deployments/${id}/rollout/approve`, { key: acme.key })).status).toBe(200);
    await tickUntil(id, (s) => s.state === "completed", "the 1.0.0 rollout to complete");
    await until(async () => (runningVersions().every((v) => v === "1.0.0") ? true : undefined), "every device to run 1.0.0");
  });

  it("a commit bumping it to 1.1.0: the plan says update 1.0.0 -> 1.1.0; the sync starts the update rollout, canary first", async () => {
    const { commit } = await git.commit("fleet", { "fleet/press.yaml": deploymentYaml("1.1.0") });
    const plan = await h.api("POST", `${base()}/${sourceId}/plan`, { key: acme.key });
    expect(plan.status, plan.text).toBe(200);
    expect(JSON.stringify(plan.body)).toContain('"action":"update"');
    const entry = plan.body.resources.find((e: { name: string }) => e.name === "press-gateway");
    expect(entry).toMatchObject({ action: "update", changes: [{ field: "version", old: "1.0.0", new: "1.1.0" }] });
    // planning wrote nothing: the deployment still runs 1.0.0 with no predecessor
    expect(await h.services.prisma.deployment.findUniqueOrThrow({ where: { id } })).toMatchObject({ version: "1.0.0" });
    expect(await h.services.prisma.deployment.count({ where: { upgradedToId: id } })).toBe(0);
    const synced = await h.api("POST", `${base()}/${sourceId}/sync`, { key: acme.key });
    expect(synced.status, synced.text).toBe(200);
    expect(synced.body).toMatchObject({ status: "applied", commit, summary: { update: 1, refused: 0 } });
    const stored = await h.services.prisma.deployment.findUniqueOrThrow({ where: { id } });
    expect(stored).toMatchObject({ version: "1.1.0", status: "running", managedBy: "source:main", managedCommit: commit });

    const atGate = await tickUntil(id, (s) => s.state === "awaiting_approval", "the canary of 1.1.0");
    expect(atGate).toMatchObject({ currentBatch: 0 });
    // the canary runs 1.1.0, the others still 1.0.0 (never told to remove it)
    await until(async () => {
      const versions = runningVersions().sort();
      return versions.join(" ") === ["1.0.0", "1.0.0", "1.0.0", "1.1.0"].join(" ") ? true : undefined;
    }, "the canary on 1.1.0, the others on 1.0.0");
  });

  it("approved, the update rollout completes: every device reports 1.1.0 running; the deployment shows 1.1.0 with the new commit", async () => {
    expect((await h.api("POST", `/api/v1/deployments/${id}/rollout/approve`, { key: acme.key })).status).toBe(200);
    await tickUntil(id, (s) => s.state === "completed", "the update rollout to complete");
    await until(async () => (runningVersions().every((v) => v === "1.1.0") ? true : undefined), "every device to run 1.1.0");
    const devices = await h.api("GET", `/api/v1/deployments/${id}/devices`, { key: acme.key });
    expect(devices.body.items.map((d: { state: string }) => d.state)).toEqual(Array(DEVICES).fill("running"));
    const d = (await h.api("GET", `/api/v1/deployments/${id}`, { key: acme.key })).body;
    const source = (await h.api("GET", `${base()}/${sourceId}`, { key: acme.key })).body;
    expect(d).toMatchObject({ version: "1.1.0", rolloutState: "completed", progress: { running: DEVICES, total: DEVICES } });
    expect(d).toMatchObject({ managedBy: "source:main", managedCommit: source.lastAppliedCommit });
    // the old revision ended once every device left it; a sync of the same commit changes nothing
    expect(await h.services.prisma.deployment.findMany({ where: { upgradedToId: id }, select: { status: true, version: true } })).toEqual([{ status: "stopped", version: "1.0.0" }]);
    const again = await h.api("POST", `${base()}/${sourceId}/sync`, { key: acme.key });
    expect(again.body.summary).toMatchObject({ update: 0, refused: 0 });
  });
});
