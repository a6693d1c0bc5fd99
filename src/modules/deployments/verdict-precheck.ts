// A lock-free look at whether judging a deployment after a device report can change anything.
// Judging takes the deployment's row lock (evaluateDeployment): doing it for every `running`
// report serializes all reports of a deployment on that lock. Most of them cannot change the
// verdict (the batch is still below its success threshold and above its failure threshold), so
// they skip it. Skipping is safe: a report's entry is committed before this read (autocommit),
// so of concurrent reports the last one to read sees every other's state; the rollout job
// judges every deployment in flight again anyway. A device waiting to retry is not failed: a
// device counts as failed only when its last attempt failed.
import type { DbTx } from "../../db/client.js";
import { UTC_NOW } from "../devices/sql.js";
import { judgeBatch, type BatchProgress } from "./rollout-machine.js";
import type { Strategy } from "./strategy.js";

interface Snapshot {
  status: string;
  rolloutState: string;
  strategy: Strategy;
  batchIndex: number | null;
  batchSize: number | null;
  batchState: string | null;
  failureAccepted: boolean | null;
  deadlinePassed: boolean | null;
  running: number;
  failed: number;
  inFlight: boolean;
  held: boolean;
  awaitingRemoval: boolean;
}

/** What judging a deployment reads, in one statement: its state and the progress of the batch in flight. */
async function readSnapshot(db: DbTx, organizationId: string, deploymentId: string): Promise<Snapshot | undefined> {
  const rows = await db.$queryRaw<Snapshot[]>`
    SELECT d."status", d."rolloutState", d."strategy", b."index" AS "batchIndex", b."size" AS "batchSize", b."state" AS "batchState",
           b."failureAccepted", (b."deadlineAt" <= ${UTC_NOW}) AS "deadlinePassed",
           -- a continuous deployment's leaver that does not keep it left the batch (which shrank by it)
           (SELECT count(*) FROM "DeploymentDevice" x WHERE x."deploymentId" = d."id" AND x."batchIndex" = b."index" AND x."state" = 'running'
                  AND (x."leftAt" IS NULL OR x."desiredAction" = 'install'))::int AS "running",
           (SELECT count(*) FROM "DeploymentDevice" x WHERE x."deploymentId" = d."id" AND x."batchIndex" = b."index" AND x."state" = 'failed'
                  AND x."retryAt" IS NULL AND (x."leftAt" IS NULL OR x."desiredAction" = 'install'))::int AS "failed",
           -- all-at-once entries have no batch: (deploymentId, batchIndex, state) serves this
           EXISTS (SELECT 1 FROM "DeploymentDevice" x WHERE x."deploymentId" = d."id" AND x."batchIndex" IS NULL AND x."desiredAction" = 'install'
                      AND (x."state" IN ('pending', 'downloading', 'installing') OR x."retryAt" IS NOT NULL)) AS "inFlight",
           -- devices the disruption budget holds back: a report that frees a place admits one
           (d."disruptionBudget" IS NOT NULL AND EXISTS (SELECT 1 FROM "DeploymentDevice" x WHERE x."deploymentId" = d."id" AND x."heldForBudget"
                      AND x."state" = 'pending')) AS "held",
           EXISTS (SELECT 1 FROM "DeploymentDevice" x WHERE x."deploymentId" = d."id" AND x."desiredAction" = 'remove'
                      AND x."state" <> 'removed') AS "awaitingRemoval"
      FROM "Deployment" d
      LEFT JOIN "DeploymentBatch" b ON b."deploymentId" = d."id" AND b."index" = d."currentBatch"
     WHERE d."id" = ${deploymentId}::uuid AND d."organizationId" = ${organizationId}::uuid`;
  return rows[0];
}

/** The batch in flight of a staged rollout, as the state machine judges it; null when none is in flight. */
export async function batchInFlight(db: DbTx, organizationId: string, deploymentId: string): Promise<BatchProgress | null> {
  const s = await readSnapshot(db, organizationId, deploymentId);
  return s ? batchProgressOf(s) : null;
}

function batchProgressOf(s: Snapshot): BatchProgress | null {
  if (s.batchIndex === null || s.batchState !== "in_progress") return null;
  return { index: s.batchIndex, size: s.batchSize!, running: s.running, failed: s.failed, failureAccepted: s.failureAccepted === true, deadlinePassed: s.deadlinePassed === true };
}

export async function mayChangeVerdict(db: DbTx, organizationId: string, deploymentId: string): Promise<boolean> {
  const s = await readSnapshot(db, organizationId, deploymentId);
  if (!s) return false;
  if (s.status === "stopping" || s.status === "deleting") return !s.awaitingRemoval;
  if (s.status !== "running") return false;
  if (s.held) return true;
  if (s.strategy.type === "all-at-once") return s.rolloutState === "in_progress" && !s.inFlight;
  if (s.rolloutState !== "canary" && s.rolloutState !== "in_progress") return false;
  const batch = batchProgressOf(s);
  return batch !== null && judgeBatch(batch, s.strategy).kind !== "wait";
}
