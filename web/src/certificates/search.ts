// /certificates?days=30&offset=0: the window of the expiring device certificates and its page.
import * as z from "zod/mini";

/** The windows offered; the API accepts any 1-3650, a link with another number still opens. */
export const EXPIRING_WINDOWS = [7, 30, 90] as const;

export const certificatesSearch = z.object({
  days: z.catch(z.optional(z.number().check(z.int(), z.minimum(1), z.maximum(3650))), undefined),
  offset: z.catch(z.optional(z.number().check(z.int(), z.nonnegative())), undefined),
});
