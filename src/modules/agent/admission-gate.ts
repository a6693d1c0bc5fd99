// The one rule of what a device awaiting approval in the enrollment lobby gets: nothing
// (docs/admission.md). It heartbeats and is visible, but every path that hands something to a
// device asks this predicate first, in its own statement:
// * the heartbeat's desired state (deployments with their parameters and secrets, device
//   actions): heartbeat.ts answers an empty desired state while the device is not admitted;
// * packages and the pull grants they carry (package.ts): 404 as for a deployment it is not given;
// * the pull proxy (pull-proxy-route.ts): a grant is honoured only for an admitted device;
// * deployment targets (deployments/targets.ts): a device in the lobby is `skipped` with the
//   reason, so no rollout waits for it.
// A device in the lobby also carries no labels until approved, so no label selector matches it.

/** SQL: the device whose id is the expression `deviceId` is admitted. */
export function admittedSql(deviceId: string): string {
  return `EXISTS (SELECT 1 FROM "Device" admitted_device WHERE admitted_device."id" = ${deviceId} AND admitted_device."admission" = 'admitted')`;
}

export const AWAITING_APPROVAL = "the device awaits approval in the enrollment lobby";
