// The deployment list's state lives in the URL (/deployments?state=rolling_out&application=<id>
// &offset=50), so a filtered view can be shared or bookmarked; values that do not parse fall
// back to the defaults instead of breaking the page.
import * as z from "zod/mini";
import { DEPLOYMENT_STATES } from "../../../src/modules/deployments/deployment-state";

export const deploymentListSearch = z.object({
  /** the deployment's one state (src/modules/deployments/deployment-state.ts) */
  state: z.catch(z.optional(z.enum(DEPLOYMENT_STATES)), undefined),
  /** an application's id */
  application: z.catch(z.optional(z.string().check(z.regex(/^[0-9a-f-]{36}$/i))), undefined),
  offset: z.catch(z.optional(z.number().check(z.int(), z.nonnegative())), undefined),
  limit: z.catch(z.optional(z.union([z.literal(25), z.literal(50), z.literal(100)])), undefined),
});
export type DeploymentListSearch = z.infer<typeof deploymentListSearch>;

export const deploymentNewSearch = z.object({
  /** start from this application (a link from its catalog page) */
  application: z.catch(z.optional(z.string().check(z.regex(/^[0-9a-f-]{36}$/i))), undefined),
});
