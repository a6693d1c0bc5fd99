// Op 12's architecture breakdown, read by the service and the console alike (pure: no
// database, so the console bundles it). Devices are named by the architectures manifests use
// (NORMALIZED_ARCH in ../devices/sql.ts); one that has not reported any counts as `unknown`.

export const UNKNOWN_ARCHITECTURE = "unknown";

/**
 * The devices of a breakdown that a profile runs on: every one when the profile names no
 * architecture, else those of the named ones (a device without a reported architecture is
 * skipped, as the rollout skips it).
 */
export function eligibleDevices(byArchitecture: Record<string, number>, architectures: readonly string[] | undefined): number {
  return Object.entries(byArchitecture)
    .filter(([arch]) => !architectures || architectures.includes(arch))
    .reduce((sum, [, n]) => sum + n, 0);
}
