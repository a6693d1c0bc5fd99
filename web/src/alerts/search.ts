// The alert list's state lives in the URL (/alerts?state=resolved&severity=critical&device=<id>
// &offset=25), so a filtered view can be shared; values that do not parse fall back to defaults.
import * as z from "zod/mini";

const uuid = z.string().check(z.regex(/^[0-9a-f-]{36}$/i));

export const alertListSearch = z.object({
  state: z.catch(z.optional(z.enum(["firing", "resolved"])), undefined),
  severity: z.catch(z.optional(z.enum(["critical", "warning", "info"])), undefined),
  /** a device's id */
  device: z.catch(z.optional(uuid), undefined),
  offset: z.catch(z.optional(z.number().check(z.int(), z.nonnegative())), undefined),
  limit: z.catch(z.optional(z.union([z.literal(25), z.literal(50), z.literal(100)])), undefined),
});
export type AlertListSearch = z.infer<typeof alertListSearch>;
