// The device set of a deployment: resolved from its target when it starts (all-at-once) or
// when its rollout is initialized (staged), then frozen. Devices whose architecture the
// profile does not support, or without RAUC for a profile with a system image, are kept as
// `skipped` with the reason; a staged rollout cuts the
// eligible ones into batches in a stable pseudo-random order (so a canary is not always the
// oldest devices), the devices that are offline now last. Set-based: one statement per step,
// whatever the fleet size.
import { Prisma } from "../../generated/prisma/client.js";
import type { DbTx } from "../../db/client.js";
import { architectureEligible, raucEligible, UTC_NOW } from "../devices/sql.js";
import { batchIndexOfRank, rolloutOrder } from "../rollout-engine/ranking.js";
import { targetCondition } from "../groups/service.js";
import type { DeploymentProfile } from "../applications/manifest/index.js";
import { admittedSql, AWAITING_APPROVAL } from "../agent/admission-gate.js";
import { planBatches, type PlannedBatch, type StagedStrategy } from "./strategy.js";

// A device awaiting approval in the enrollment lobby is skipped (src/modules/agent/admission-gate.ts).
const ADMITTED = Prisma.raw(admittedSql(`d."id"`));

export interface FrozenTargets {
  eligible: number;
  skipped: number;
}

interface TargetedDeployment {
  id: string;
  organizationId: string;
  labelSelector: unknown;
  targetDeviceIds: string[];
}

/** Replaces the deployment's device set with the devices its target matches now. */
export async function freezeTargets(db: DbTx, deployment: TargetedDeployment, profile: DeploymentProfile): Promise<FrozenTargets> {
  await db.deploymentDevice.deleteMany({ where: { deploymentId: deployment.id } });
  const target = deployment.labelSelector ? { labelSelector: deployment.labelSelector as Record<string, string> } : { deviceIds: deployment.targetDeviceIds };
  const architectures = profile.requiredResources?.cpu?.architectures ?? null;
  const needs = architectures?.join(", ") ?? "";
  const systemImage = profile.components.find((c) => c.properties.type === "system-image");
  // a system image is installed by RAUC: a device whose agent does not report it (fact rauc) cannot take it
  const raucReported = raucEligible(Boolean(systemImage));
  const noRauc = systemImage
    ? `the profile installs a system image (component ${systemImage.name}, a RAUC bundle) and the device does not report RAUC (fact rauc); see docs/os-updates.md`
    : "";
  const eligible = Prisma.sql`(${architectureEligible(architectures)} AND ${raucReported})`;
  const rows = await db.$queryRaw<Array<{ state: string; n: number }>>`
    WITH inserted AS (
      INSERT INTO "DeploymentDevice" ("deploymentId", "deviceId", "organizationId", "state", "reason", "stateChangedAt")
      SELECT ${deployment.id}::uuid, d."id", d."organizationId",
             CASE WHEN ${eligible} AND ${ADMITTED} THEN 'pending' ELSE 'skipped' END,
             CASE WHEN NOT ${ADMITTED} THEN ${AWAITING_APPROVAL}
                  WHEN ${eligible} THEN NULL
                  WHEN NOT ${raucReported} THEN ${noRauc}
                  WHEN d."arch" IS NULL THEN 'the device has not reported its architecture; the profile needs ' || ${needs}
                  ELSE 'architecture ' || d."arch" || ' is not supported by the profile (' || ${needs} || ')' END,
             ${UTC_NOW}
        FROM "Device" d
       WHERE ${targetCondition(deployment.organizationId, target)}
      RETURNING "state"
    )
    SELECT "state", count(*)::int AS "n" FROM inserted GROUP BY 1`;
  const count = (state: string) => rows.find((r) => r.state === state)?.n ?? 0;
  return { eligible: count("pending"), skipped: count("skipped") };
}

/**
 * Plans the batches of a staged rollout over the frozen eligible devices and assigns each device
 * its batch. Devices that are offline now come last: the canary (and each batch after it) is
 * drawn from devices seen recently while there are enough of them, so it never waits on a device
 * that is not there (the order is the rollout engine's, shared with jobs: rollout-engine/ranking.ts).
 */
export async function planRollout(db: DbTx, deploymentId: string, strategy: StagedStrategy, eligible: number): Promise<PlannedBatch[]> {
  await db.deploymentBatch.deleteMany({ where: { deploymentId } });
  const plan = planBatches(strategy, eligible);
  if (!plan.length) return plan;
  await db.$executeRaw`
    WITH ranked AS (
      SELECT dd.ctid AS "row", row_number() OVER (ORDER BY ${rolloutOrder("dev", Prisma.sql`dd."deviceId"`, deploymentId)}) AS "rank"
        FROM "DeploymentDevice" dd JOIN "Device" dev ON dev."id" = dd."deviceId"
       WHERE dd."deploymentId" = ${deploymentId}::uuid AND dd."state" = 'pending'
    )
    UPDATE "DeploymentDevice" dd
       SET "batchIndex" = ${batchIndexOfRank(plan, Prisma.sql`r."rank"`)}
      FROM ranked r
     WHERE dd.ctid = r."row"`;
  await db.deploymentBatch.createMany({ data: plan.map((b) => ({ deploymentId, index: b.index, kind: b.kind, size: b.size })) });
  return plan;
}
