// A layer revision rolled out like software (docs/configuration.md, "Rollout"): the jobs engine's
// own job (src/modules/jobs/: canary and batches, thresholds, maintenance windows, disruption
// budget, pause, resume, cancel, expiry, its console page) of the kind apply-configuration, over
// the devices the layer applies to now. A device whose action the job admits gets the job's
// revision of the layer with its heartbeat (heartbeat.ts); the job completing releases it to
// every device (jobs/configuration.ts); cancelled or expired, the released revision stays.
import type { DbTx } from "../../db/client.js";
import type { Principal } from "../../trpc/principal.js";
import { conflict } from "../../trpc/errors.js";
import { CONFIGURATION_KIND } from "../device-actions/kinds.js";
import { LIVE_JOB_STATES } from "../jobs/schemas.js";
import type { RolloutDto, RolloutInput } from "./schemas.js";
import { cancelJob, createJob } from "../jobs/service.js";
import { labelsOf } from "../devices/labels.js";

interface Placed {
  id: string;
  name: string;
  kind: string;
  selector: unknown;
  deviceId: string | null;
}

/** The live rollout of each layer (one statement over ActionJob(configLayerId, state)). */
export async function liveRollouts(db: DbTx, layerIds: string[]): Promise<Map<string, RolloutDto>> {
  if (!layerIds.length) return new Map();
  const jobs = await db.actionJob.findMany({
    where: { configLayerId: { in: layerIds }, state: { in: [...LIVE_JOB_STATES] } },
    select: { id: true, configLayerId: true, configRevision: true, state: true },
  });
  return new Map(jobs.map((j) => [j.configLayerId!, { jobId: j.id, revision: j.configRevision!, state: j.state as "in_progress" | "paused" }]));
}

/** The devices the layer applies to now, as a job's target. */
function targetOf(layer: Placed) {
  if (layer.kind === "device") return { deviceIds: [layer.deviceId!] };
  return { labelSelector: layer.kind === "selector" ? labelsOf(layer.selector) : {} };
}

export interface Release {
  /** the rollout job created for the revision */
  rolloutJobId: string | null;
  rolloutDevices: number;
  /** a live rollout cancelled because the revision was released at once */
  cancelledJobId: string | null;
}

/**
 * What a new revision of a layer does, in the caller's transaction: with `rollout`, an
 * apply-configuration job over the layer's devices (409 naming `rollout` while another lives;
 * 409 when the layer applies to no device that can take it); without, it is released at once,
 * and a live rollout of the layer is cancelled first (its devices get the new revision too).
 */
export async function releaseOrRollOut(db: DbTx, principal: Principal, layer: Placed, revision: number, rollout: RolloutInput | undefined, by: string): Promise<Release> {
  const live = (await liveRollouts(db, [layer.id])).get(layer.id);
  if (rollout) {
    if (live) {
      throw conflict(`rollout: layer "${layer.name}" has a rollout in progress (job ${live.jobId}, revision ${live.revision}, ${live.state}): cancel it first, or release the revision at once (without rollout)`);
    }
    const job = await createJob(db, principal, {
      ...rollout,
      kind: CONFIGURATION_KIND,
      configuration: { layerId: layer.id, revision },
      target: targetOf(layer),
      reason: rollout.reason ?? `layer ${layer.name} revision ${revision}`,
    });
    return { rolloutJobId: job.id, rolloutDevices: job.eligible, cancelledJobId: null };
  }
  if (live) await cancelJob(db, principal.organizationId, live.jobId, `cancelled: revision ${revision} of layer ${layer.name} was released at once by ${by}`);
  await db.configLayer.update({ where: { id: layer.id }, data: { releasedRevision: revision, updatedAt: new Date() } });
  return { rolloutJobId: null, rolloutDevices: 0, cancelledJobId: live?.jobId ?? null };
}

/** Cancels a layer's live rollout (the layer is deleted). */
export async function cancelLiveRollout(db: DbTx, organizationId: string, layer: { id: string; name: string }): Promise<void> {
  const live = (await liveRollouts(db, [layer.id])).get(layer.id);
  if (live) await cancelJob(db, organizationId, live.jobId, `cancelled: layer ${layer.name} was deleted`);
}
