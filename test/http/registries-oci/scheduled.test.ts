// Scheduled OCI syncs through the job runner: one jittered job per due registry (unique key per
// registry), run as the scheduler against a real registry.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { JobRunner } from "../../../src/jobs/index.js";
import { OCI_SYNC_JOB, ociRegistryJobs, ociSyncJobKey } from "../../../src/modules/registries/oci/jobs.js";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { startOciRegistry, type OciRegistryServer } from "../../support/oci-registry.js";
import { peerAvailable } from "../../support/peers.js";
import { appYaml } from "../registries-git/support.js";

const SCHEDULE = "schedule.oci-registry.due-syncs";
let h: Harness;
let registry: OciRegistryServer;
let acme: Tenant;

beforeAll(async () => {
  [h, registry] = await Promise.all([createHarness(), startOciRegistry()]);
  acme = await h.createTenant("Acme OCI Scheduled");
  await registry.pushPackage("sched/app", "1.0.0", appYaml("sched-app", "1.0.0"));
}, 60_000);
afterAll(async () => {
  await registry?.close();
  await h?.close();
});

const create = async (body: Record<string, unknown>) => {
  const res = await h.api("POST", "/api/v1/registries/oci", { key: acme.key, body: { url: registry.url, repositories: ["sched/app"], ...body } });
  expect(res.status, res.text).toBe(201);
  return res.body;
};

describe.skipIf(!peerAvailable("docker-registry"))("scheduled OCI syncs", () => {
  it("enqueues one job per due registry, never two, and the job syncs as the scheduler", async () => {
    const due = await create({ name: "Due", syncIntervalMinutes: 30 });
    await create({ name: "Manual only", syncIntervalMinutes: 0 });
    await create({ name: "Disabled", enabled: false });
    const runner = new JobRunner(h.services, { ...ociRegistryJobs(), concurrency: 2, workerId: "oci-scheduler" });
    const runSchedule = async () => {
      await runner.enqueue({ type: SCHEDULE, uniqueKey: SCHEDULE, maxAttempts: 1 });
      await h.services.prisma.$executeRaw`UPDATE "Job" SET "runAt" = '2000-01-01' WHERE "type" = ${SCHEDULE} AND "state" = 'pending'`;
      await runner.runOnce();
    };
    await runSchedule();
    await runSchedule();
    const jobs = await h.services.prisma.job.findMany({ where: { type: OCI_SYNC_JOB } });
    expect(jobs.map((j) => j.uniqueKey)).toEqual([ociSyncJobKey(due.id)]);
    await h.services.prisma.$executeRaw`UPDATE "Job" SET "runAt" = '2000-01-01' WHERE "type" = ${OCI_SYNC_JOB} AND "state" = 'pending'`;
    await runner.runOnce();
    const history = await h.api("GET", `/api/v1/registries/oci/${due.id}/sync-history`, { key: acme.key });
    expect(history.body.data[0]).toMatchObject({ status: "success", applicationsImported: 1, triggeredBy: "scheduler" });
  });
});
