// A deployment's system image handed to the OS updater (docs/os-updates.md): the install step of
// a deployment whose desired state carries `systemImage` runs the OS update first, and only once
// the new system booted, passed its health checks and was marked good does the step go on to the
// compose projects. A rollback or a failure fails the step with the updater's reason (reported
// to the service as the deployment's failure; "updated" is never said of a system that fell back).
//
// The step survives the reboot: the agent starts again in the new system, the deployment state
// machine begins the install step again, and this finds the update of the same deployment and
// attempt in the updater's state (trial: it waits; updated: it goes on). Another attempt of the
// deployment (a retry) begins the update again.
import type { SystemImageEntry } from "../core/deployments.js";
import type { OsUpdateState, OsUpdateTarget } from "./updater.js";

/** The part of the OS updater (updater.ts) a deployment uses. */
export interface SystemUpdater {
  readonly update: OsUpdateState | null;
  inProgress(): boolean;
  begin(target: OsUpdateTarget): void;
  prefetch(target: OsUpdateTarget): Promise<void>;
  /** the bundle digest (sha256:<hex>) the agent installed into the booted slot, null when unknown */
  bootedDigest(): string | null;
}

export interface SystemImageInstaller {
  /** Resolves once the image runs, committed; rejects with the reason it did not. */
  install(image: SystemImageEntry, deployment: { deploymentId: string; attempt: number; healthSeconds?: number }): Promise<void>;
  /**
   * The download step (a maintenance window's download-only phase among others): the bundle is
   * fetched ahead of the install. Rejects only when asking again cannot help (a digest mismatch).
   */
  download(image: SystemImageEntry): Promise<void>;
}

export interface HandOverOptions {
  /** undefined until the agent made it (a step begun again at start waits for it) */
  updater: () => SystemUpdater | undefined;
  /** the service's URL: an oci:// bundle is fetched from the service's relay (`bundlePath`) below it */
  serviceUrl: string;
  log: (level: "info" | "warn" | "error", message: string) => void;
  /** how often the updater's state is looked at while the update runs; default 1 s */
  pollMs?: number;
}

export function systemImageInstaller(options: HandOverOptions): SystemImageInstaller {
  const pollMs = options.pollMs ?? 1000;
  /** Where and how the bundle is fetched: its https:// URL, or the service's relay of an oci:// one (with the device's token). */
  const source = (image: SystemImageEntry): Pick<OsUpdateTarget, "url" | "sha256" | "version" | "serviceAuth"> => {
    const sha256 = image.digest.replace(/^sha256:/, "");
    if (!/^[0-9a-f]{64}$/.test(sha256)) throw new Error(`component ${image.component}: the digest ${image.digest} is not sha256:<64 hex digits>`);
    if (image.url) return { url: image.url, sha256, version: image.version };
    if (image.bundlePath) return { url: new URL(image.bundlePath, options.serviceUrl).toString(), sha256, version: image.version, serviceAuth: true };
    throw new Error(`component ${image.component}: the service handed no way to fetch the bundle ${image.repository} (neither an https:// URL nor its relay of an oci:// bundle): the service is older than this agent`);
  };
  return {
    async download(image) {
      const target = source(image);
      const updater = options.updater();
      // starting, or the image runs already: the install step decides
      if (!updater || updater.bootedDigest() === image.digest) return;
      await updater.prefetch(target);
    },
    async install(image, deployment) {
      const target = source(image);
      const { sha256 } = target;
      const ours = (update: OsUpdateState | null) =>
        update?.target.sha256 === sha256 && update.target.deploymentId === deployment.deploymentId && update.target.attempt === deployment.attempt;
      for (;;) {
        const updater = options.updater();
        const update = updater?.update ?? null;
        if (!updater) {
          // the agent is starting: the updater reads RAUC's view first
        } else if (ours(update)) {
          if (update!.phase === "updated") return;
          if (update!.phase === "rolled-back") throw new Error(`system update ${image.version} rolled back: ${update!.reason}`);
          if (update!.phase === "failed") throw new Error(`system update ${image.version} failed: ${update!.reason}`);
        } else if (!updater.inProgress()) {
          // the image runs already (installed by an earlier deployment or attempt): nothing to update
          if (updater.bootedDigest() === image.digest) return;
          options.log("info", `deployment ${deployment.deploymentId}: system image ${image.version} first (${image.url ?? image.repository})`);
          updater.begin({
            ...target, deploymentId: deployment.deploymentId, attempt: deployment.attempt,
            ...(deployment.healthSeconds ? { healthSeconds: deployment.healthSeconds } : {}),
          });
        }
        // another update runs (fleet-agent os-update, or another deployment's): it finishes first.
        // The wait never settles on its own when the agent stops (the reboot): the step is begun
        // again in the next run, so the timer does not keep the process alive.
        await new Promise((resolve) => setTimeout(resolve, pollMs).unref());
      }
    },
  };
}
