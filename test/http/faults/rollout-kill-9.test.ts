// kill -9 of a server process while agent reports move a staged rollout from batch to batch
// (automatic advance): after the crash the rollout is never half-moved (every batch before
// the current one succeeded, the current one is dispatched to exactly its devices, nothing
// after it is), and a restarted process carries the rollout on: its rollout job judges what
// the dead process stored but did not judge, and the agents' next reports complete it.
// PostgreSQL only: the scenario needs a server process beside the test's own connection.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import type { EnrolledDevice } from "../agent/fleet-support.js";
import { enrollFleet, importVersion } from "../deployments/support.js";
import { databaseUrlOf, eventually, SHARED_KEYS, startServerProcess, type ServerProcess } from "../scale-out/processes.js";

const ON_POSTGRES = Boolean(process.env.DATABASE_URL);

describe.skipIf(!ON_POSTGRES)("kill -9 during rollout transitions (PostgreSQL; skipped without DATABASE_URL)", () => {
  let h: Harness;
  let acme: Tenant;
  let fleet: EnrolledDevice[];
  let deploymentId: string;
  const processes: ServerProcess[] = [];

  beforeAll(async () => {
    h = await createHarness({ ...SHARED_KEYS }); // the processes seal and open with the same key (their start checks it)
    acme = await h.createTenant("Acme Crash Rollout");
    const appId = await importVersion(h, acme.org.id, { version: "3.0.0", parametersYaml: "  {}\n" });
    fleet = await enrollFleet(h, acme.key, 40, { arch: "arm64", labels: { ring: "crash" } });
    const created = await h.api("POST", "/api/v1/deployments", {
      key: acme.key,
      body: {
        name: "crash-rollout", applicationId: appId, version: "3.0.0", profileId: "compose-main", target: { labelSelector: { ring: "crash" } },
        strategy: { type: "staged", canary: { count: 10 }, batches: [{ count: 10 }, { count: 10 }, { count: 10 }], successThreshold: 100, autoAdvance: true },
      },
    });
    expect(created.status, created.text).toBe(201);
    deploymentId = created.body.id;
    expect((await h.api("POST", `/api/v1/deployments/${deploymentId}/start`, { key: acme.key })).status).toBe(200);
  }, 120_000);

  afterAll(async () => {
    for (const p of processes) await p.kill();
    await h?.close();
  });

  /** The invariants a crash must never break, read straight from the database. */
  async function expectConsistent() {
    const deployment = await h.services.prisma.deployment.findUniqueOrThrow({ where: { id: deploymentId } });
    const batches = await h.services.prisma.deploymentBatch.findMany({ where: { deploymentId }, orderBy: { index: "asc" } });
    const current = deployment.currentBatch!;
    for (const b of batches) {
      if (b.index < current) expect(b.state, `batch ${b.index} before the current ${current}`).toBe("succeeded");
      if (b.index > current) expect(b.state, `batch ${b.index} after the current ${current}`).toBe("planned");
    }
    const dispatched = await h.services.prisma.deploymentDevice.groupBy({ by: ["batchIndex"], where: { deploymentId, desiredAction: "install" }, _count: { _all: true } });
    const byBatch = new Map(dispatched.map((d) => [d.batchIndex, d._count._all]));
    for (const b of batches) expect(byBatch.get(b.index) ?? 0, `devices dispatched in batch ${b.index}`).toBe(b.index <= current ? 10 : 0);
    if (deployment.rolloutState === "completed") expect(batches.every((b) => b.state === "succeeded")).toBe(true);
    else expect(["canary", "in_progress"]).toContain(deployment.rolloutState);
    return deployment;
  }

  /** Every device told to install reports running through `p`, all at once; `onAnswer` sees each answer arrive. */
  async function reportRunning(p: ServerProcess, onAnswer?: (answered: number) => void) {
    let answered = 0;
    await Promise.allSettled(
      fleet.map(async (device) => {
        const res = await p.api("POST", "/api/v1/agent/heartbeat", { key: null, token: await device.token(), body: {} });
        if (res.status !== 200 || !res.body.deployments.some((d: { deploymentId: string }) => d.deploymentId === deploymentId)) return;
        await p.api("POST", "/api/v1/agent/heartbeat", { key: null, token: await device.token(), body: { deployments: [{ deploymentId, state: "running" }] } });
        onAnswer?.(++answered);
      }),
    );
  }

  it("is never half-moved by a crash, and a restarted process completes it", async () => {
    const env = { DATABASE_URL: databaseUrlOf(h) };
    // Two crashes, each while a batch's last reports (and so its transition) are in flight.
    for (let crash = 0; crash < 2; crash++) {
      const p = await startServerProcess(`rollout-${crash}`, env);
      processes.push(p);
      let killing: Promise<void> | null = null;
      await reportRunning(p, (answered) => {
        if (answered === 5 && !killing) killing = p.kill();
      });
      await (killing ?? p.kill());
      await expectConsistent();
    }

    const survivor = await startServerProcess("rollout-survivor", env);
    processes.push(survivor);
    // Reports the dead processes stored but did not judge are judged by the rollout job
    // (every 10 s); the agents keep reporting what they run.
    const done = await eventually(async () => {
      await reportRunning(survivor);
      const deployment = await expectConsistent();
      return deployment.rolloutState === "completed" ? deployment : undefined;
    }, 120_000, "the rollout completes after the crashes").catch(async (err) => {
      const d = await h.services.prisma.deployment.findUniqueOrThrow({ where: { id: deploymentId } });
      const states = await h.services.prisma.deploymentDevice.groupBy({ by: ["batchIndex", "state", "desiredAction"], where: { deploymentId }, _count: { _all: true } });
      console.log(JSON.stringify({ d: [d.rolloutState, d.currentBatch, d.rolloutReason, d.status], states }), survivor.output.slice(-8).join("\n"));
      throw err;
    });
    expect(done.rolloutReason).toBe("all 4 batches reached the success threshold");
    const running = await h.services.prisma.deploymentDevice.count({ where: { deploymentId, state: "running" } });
    expect(running).toBe(40);
    expect(await h.services.prisma.deviceVersionHistory.count({ where: { deploymentId, succeeded: true } })).toBe(40);
  }, 300_000);
});
