// kill -9 of a server process in the middle of an OCI registry sync: the process has listed
// the tags and waits for a manifest (a proxy holds it) when it dies. Nothing of the catalog
// is written; a restarted process takes the job over once its lock expires, and the registry
// syncs exactly once when the dead sync's lease has expired too (both expiries are moved
// forward with SQL instead of waited for). PostgreSQL only: the test watches the database
// beside the server processes.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { startOciRegistry, type OciRegistryServer } from "../../support/oci-registry.js";
import { peerAvailable } from "../../support/peers.js";
import { gatedProxy, type GatedProxy } from "../../support/gated-proxy.js";
import { enqueueJob } from "../../../src/jobs/queue.js";
import { OCI_SYNC_JOB, ociSyncJobKey } from "../../../src/modules/registries/oci/jobs.js";
import { appYaml } from "../registries-git/support.js";
import { databaseUrlOf, eventually, startServerProcess } from "../scale-out/processes.js";

const ON_POSTGRES = Boolean(process.env.DATABASE_URL);

describe.skipIf(!ON_POSTGRES || !peerAvailable("docker-registry"))("kill -9 during an OCI sync job (PostgreSQL; skipped without DATABASE_URL or docker-registry)", () => {
  let h: Harness;
  let tenant: Tenant;
  let registry: OciRegistryServer;
  let proxy: GatedProxy;

  beforeAll(async () => {
    h = await createHarness();
    tenant = await h.createTenant("Fault OCI");
    registry = await startOciRegistry();
    for (let i = 0; i < 3; i++) await registry.pushPackage("edge/fault", `1.0.${i}`, appYaml("oci-fault-app", `1.0.${i}`));
    // Tag lists pass; the first manifest read is held.
    proxy = await gatedProxy(registry.url, (req) => req.method === "GET" && Boolean(req.url?.includes("/manifests/")));
  }, 60_000);

  afterAll(async () => {
    await proxy?.close();
    await registry?.close();
    await h?.close();
  });

  it("nothing of the catalog is written; a restarted process takes the job over and the registry syncs once", async () => {
    const env = { DATABASE_URL: databaseUrlOf(h), OUTBOUND_ALLOW_PRIVATE_NETWORKS: "true" };
    const first = await startServerProcess("oci-first", env, tenant.key);
    const created = await first.api("POST", "/api/v1/registries/oci", {
      // a short interval: the due-syncs schedule delays a sync by a jitter of up to a tenth of it
      body: { name: "fault oci registry", url: proxy.url, repositories: ["edge/fault"], verifyTls: false, syncIntervalMinutes: 1 },
    });
    expect(created.status, created.text).toBe(201);
    const registryId = created.body.id as string;
    const jobId = await enqueueJob(h.services.prisma, {
      type: OCI_SYNC_JOB, payload: { organizationId: tenant.org.id, registryId }, uniqueKey: ociSyncJobKey(registryId), maxAttempts: 3,
    });
    expect(jobId).not.toBeNull();

    await eventually(async () => proxy.heldFetches > 0, 30_000, "the sync to wait for a manifest");
    expect(await h.services.prisma.job.findUniqueOrThrow({ where: { id: jobId! } })).toMatchObject({ state: "running", attempts: 1 });
    await first.kill();

    // Nothing half-written.
    const row = await h.services.prisma.ociRegistry.findUniqueOrThrow({ where: { id: registryId } });
    expect(row).toMatchObject({ lastSyncAt: null, lastSyncError: null });
    expect(row.syncLeaseUntil).not.toBeNull();
    expect(await h.services.prisma.application.count({ where: { organizationId: tenant.org.id } })).toBe(0);
    expect(await h.services.prisma.auditEntry.count({ where: { action: "registries.oci.sync", entityId: registryId } })).toBe(0);

    proxy.open();
    const second = await startServerProcess("oci-second", env, tenant.key);
    try {
      // The job's lock expires: the second process takes it over.
      await h.services.prisma.$executeRaw`UPDATE "Job" SET "lockedUntil" = now() - interval '1 second' WHERE "id" = ${jobId}::uuid`;
      await eventually(async () => {
        const job = await h.services.prisma.job.findUniqueOrThrow({ where: { id: jobId! } });
        return job.state !== "running" && job.state !== "pending" && job.attempts === 2 && job;
      }, 30_000, "the job to be taken over");
      // The dead sync's lease expires too; the due-syncs schedule (brought forward) enqueues the sync again.
      await h.services.prisma.$executeRaw`UPDATE "OciRegistry" SET "syncLeaseUntil" = now() - interval '1 second' WHERE "id" = ${registryId}::uuid`;
      // The dead process may have been running the schedule itself: its lock expires too.
      await h.services.prisma.$executeRaw`UPDATE "Job" SET "lockedUntil" = now() - interval '1 second' WHERE "state" = 'running' AND "type" = 'schedule.oci-registry.due-syncs'`;
      await h.services.prisma.$executeRaw`UPDATE "Job" SET "runAt" = now() WHERE "type" = 'schedule.oci-registry.due-syncs' AND "state" = 'pending'`;
      const synced = await eventually(async () => {
        const r = await h.services.prisma.ociRegistry.findUniqueOrThrow({ where: { id: registryId } });
        // the lease is released just after the sync committed: wait for both
        return r.lastSyncAt !== null && r.syncLeaseUntil === null && r;
      }, 90_000, "the registry to sync after the restart");
      expect(synced.syncLeaseUntil).toBeNull();
      const versions = await h.services.prisma.applicationVersion.findMany({ where: { organizationId: tenant.org.id }, orderBy: { version: "asc" } });
      expect(versions.map((v) => v.version)).toEqual(["1.0.0", "1.0.1", "1.0.2"]);
      expect(await h.services.prisma.auditEntry.count({ where: { action: "registries.oci.sync", entityId: registryId, outcome: "success" } })).toBe(1);
      expect(await second.stop()).toBe(0);
    } finally {
      await second.kill();
    }
  }, 180_000);
});
