// /platform/organizations?search=acme&status=suspended&offset=50: the Super Admin's list of
// organizations, filtered and paged in the URL; a bad value falls back to the default.
import * as z from "zod/mini";

export const ORGANIZATION_STATUSES = ["active", "suspended", "pending", "disabled"] as const;

export const organizationsSearch = z.object({
  search: z.catch(z.optional(z.string().check(z.maxLength(100))), undefined),
  status: z.catch(z.optional(z.enum(ORGANIZATION_STATUSES)), undefined),
  offset: z.catch(z.optional(z.number().check(z.int(), z.nonnegative())), undefined),
});
