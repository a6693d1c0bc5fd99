// The disruption budget over the agent protocol, across three sites: at most one device per
// site is between being told to install and reporting running or failed, checked from the
// stored device states after every round of heartbeats; held-back devices are
// waiting_for_budget; a failure frees its place; the rollout still completes. And a staged
// rollout whose canary the budget paces still succeeds by its threshold.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import type { EnrolledDevice } from "../agent/fleet-support.js";
import { agentHeartbeat, enrollFleet, importVersion } from "./support.js";

let h: Harness;
let acme: Tenant;
let appId: string;
const sites: Record<string, EnrolledDevice[]> = {};

beforeAll(async () => {
  h = await createHarness();
  acme = await h.createTenant("Acme Budget");
  appId = await importVersion(h, acme.org.id, { version: "1.0.0", parametersYaml: "  {}\n" });
  for (const site of ["berlin", "lyon", "porto"]) sites[site] = await enrollFleet(h, acme.key, 4, { labels: { ring: "budget", site } });
}, 120_000);

afterAll(async () => {
  await h?.close();
});

async function createAndStart(strategy: Record<string, unknown>, budget: Record<string, unknown>) {
  const res = await h.api("POST", "/api/v1/deployments", {
    key: acme.key,
    body: { name: `paced-${Math.random().toString(36).slice(2, 8)}`, applicationId: appId, version: "1.0.0", profileId: "compose-main", target: { labelSelector: { ring: "budget" } }, strategy, disruptionBudget: budget },
  });
  expect(res.status, res.text).toBe(201);
  const started = await h.api("POST", `/api/v1/deployments/${res.body.id}/start`, { key: acme.key });
  expect(started.status, started.text).toBe(200);
  return res.body.id as string;
}

/** Devices per site told to install and not yet running or failed, from the stored states. */
async function unavailableBySite(id: string): Promise<Record<string, number>> {
  const rows = await h.services.prisma.$queryRaw<Array<{ site: string; n: number }>>`
    SELECT d."labels"->>'site' AS "site", count(*)::int AS "n"
      FROM "DeploymentDevice" dd JOIN "Device" d ON d."id" = dd."deviceId"
     WHERE dd."deploymentId" = ${id}::uuid AND dd."desiredAction" = 'install' AND dd."state" IN ('pending', 'downloading', 'installing')
     GROUP BY 1`;
  return Object.fromEntries(rows.map((r) => [r.site, r.n]));
}

describe("disruption budget across three sites", () => {
  it("never has more than one device per site in flight; held devices wait for the budget; a failure frees a place; it completes", async () => {
    const id = await createAndStart({ type: "all-at-once" }, { groupBy: ["site"], maxUnavailable: { count: 1 } });
    const first = (await h.api("GET", `/api/v1/deployments/${id}`, { key: acme.key })).body;
    expect(first.progress).toMatchObject({ pending: 3, waiting_for_budget: 9, total: 12 });
    expect(await unavailableBySite(id)).toEqual({ berlin: 1, lyon: 1, porto: 1 });
    // each entry carries its group from the start: a report counts and admits its own group only
    const grouped = await h.services.prisma.deploymentDevice.groupBy({ by: ["budgetGroup"], where: { deploymentId: id }, _count: { _all: true } });
    expect(Object.fromEntries(grouped.map((g) => [g.budgetGroup, g._count._all]))).toEqual({ '["berlin"]': 4, '["lyon"]': 4, '["porto"]': 4 });

    const all = Object.values(sites).flat();
    const failing = sites.lyon[0];
    let rounds = 0;
    let peak = 0;
    for (;;) {
      rounds++;
      expect(rounds, "the rollout should finish within 12 rounds").toBeLessThan(12);
      for (const device of all) {
        const told = (await agentHeartbeat(h, device)).some((d) => d.deploymentId === id && d.action === "install");
        if (!told) continue;
        const entry = await h.services.prisma.deploymentDevice.findUniqueOrThrow({ where: { deploymentId_deviceId: { deploymentId: id, deviceId: device.deviceId } } });
        if (entry.state !== "pending") continue;
        await agentHeartbeat(h, device, [{ deploymentId: id, state: "installing" }]);
        peak = Math.max(peak, ...Object.values(await unavailableBySite(id)));
        await agentHeartbeat(h, device, [{ deploymentId: id, state: device === failing ? "failed" : "running", message: device === failing ? "no space" : undefined }]);
      }
      const d = (await h.api("GET", `/api/v1/deployments/${id}`, { key: acme.key })).body;
      if (d.rolloutState === "completed") {
        expect(d.progress).toMatchObject({ running: 11, failed: 1, waiting_for_budget: 0 });
        expect(d.rolloutReason).toBe("every device reported running or failed (no attempt left)");
        break;
      }
    }
    expect(peak).toBe(1);
  });

  it("paces a staged canary by the budget; the canary still succeeds by its threshold", async () => {
    const id = await createAndStart(
      { type: "staged", canary: { count: 6 }, batches: [], successThreshold: 50, autoAdvance: false },
      { groupBy: ["site"], maxUnavailable: { percent: 25 } },
    );
    const status = (await h.api("GET", `/api/v1/deployments/${id}/rollout`, { key: acme.key })).body;
    const canary = status.batches[0];
    expect(canary.size).toBe(6);
    // 25% of 4 devices per site: one at a time per site
    for (const n of Object.values(await unavailableBySite(id))) expect(n).toBeLessThanOrEqual(1);
    expect(canary.counts.pending + canary.counts.waitingForBudget).toBe(6);
    expect(canary.counts.waitingForBudget).toBeGreaterThanOrEqual(3);
    // report running for whoever is told to install until the gate
    for (let round = 0; round < 6; round++) {
      for (const device of Object.values(sites).flat()) {
        if ((await agentHeartbeat(h, device)).some((d) => d.deploymentId === id && d.action === "install")) await agentHeartbeat(h, device, [{ deploymentId: id, state: "running" }]);
        for (const n of Object.values(await unavailableBySite(id))) expect(n).toBeLessThanOrEqual(1);
      }
      if ((await h.api("GET", `/api/v1/deployments/${id}/rollout`, { key: acme.key })).body.state === "awaiting_approval") break;
    }
    expect((await h.api("GET", `/api/v1/deployments/${id}/rollout`, { key: acme.key })).body).toMatchObject({ state: "awaiting_approval" });
  });
});
