// /activity?type=login_failed&from=...&offset=50: the platform activity view's filters and
// page, in the URL like every list.
import * as z from "zod/mini";
import { instant, uuid } from "../audit/search";

/** The activity types of the service (src/modules/activity/types.ts). */
export const ACTIVITY_TYPES = ["login", "login_failed", "logout", "auth_event", "access_denied", "tenant_switch", "api_key_use", "change"] as const;


export const activitySearch = z.object({
  type: z.catch(z.optional(z.enum(ACTIVITY_TYPES)), undefined),
  organization: z.catch(z.optional(uuid), undefined),
  from: z.catch(z.optional(instant), undefined),
  to: z.catch(z.optional(instant), undefined),
  offset: z.catch(z.optional(z.number().check(z.int(), z.nonnegative())), undefined),
  limit: z.catch(z.optional(z.union([z.literal(25), z.literal(50), z.literal(100)])), undefined),
});
export type ActivitySearch = z.infer<typeof activitySearch>;
