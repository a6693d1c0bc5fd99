// /groups?key=site&selector=tier=edge: the label key explored and the selector evaluated.
import * as z from "zod/mini";

export const groupsSearch = z.object({
  key: z.catch(z.optional(z.string().check(z.maxLength(128))), undefined),
  selector: z.catch(z.optional(z.string().check(z.maxLength(8000))), undefined),
});
