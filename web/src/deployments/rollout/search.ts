// The rollout page's URL: /deployments/<id>?state=failed&offset=25 (the device table's filter
// and page), so a view of the failed devices can be shared. Bad values fall back to defaults.
import * as z from "zod/mini";

/** The per-device states of a deployment (src/modules/deployments/schemas.ts DEVICE_DEPLOYMENT_STATES). */
export const DEVICE_STATES = ["pending", "downloading", "installing", "running", "failed", "removing", "removed", "skipped", "cancelled", "superseded"] as const;
export type DeviceState = (typeof DEVICE_STATES)[number];

export const rolloutSearch = z.object({
  state: z.catch(z.optional(z.enum(DEVICE_STATES)), undefined),
  offset: z.catch(z.optional(z.number().check(z.int(), z.nonnegative())), undefined),
});
export type RolloutSearch = z.infer<typeof rolloutSearch>;
