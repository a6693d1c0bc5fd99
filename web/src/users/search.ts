// /platform/users?search=ada&status=disabled&offset=50: the user list's filters and page, in
// the URL so a view can be shared; values that do not parse fall back to the defaults.
import * as z from "zod/mini";

export const usersSearch = z.object({
  search: z.catch(z.optional(z.string().check(z.maxLength(100))), undefined),
  status: z.catch(z.optional(z.enum(["active", "disabled"])), undefined),
  offset: z.catch(z.optional(z.number().check(z.int(), z.nonnegative())), undefined),
});
export type UsersSearch = z.infer<typeof usersSearch>;
