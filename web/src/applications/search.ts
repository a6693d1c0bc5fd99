// /applications?q=vision&tag=camera&registry=<id>&offset=50: the catalog's search, filters and
// page live in the URL, so a view can be shared; values that do not parse fall back to defaults.
import * as z from "zod/mini";

export const CATALOG_PAGE_SIZE = 25;

export const applicationsSearch = z.object({
  q: z.catch(z.optional(z.string().check(z.maxLength(200))), undefined),
  /** an exact tag */
  tag: z.catch(z.optional(z.string().check(z.maxLength(200))), undefined),
  /** the id of the registry the latest version came from */
  registry: z.catch(z.optional(z.string().check(z.regex(/^[0-9a-f-]{36}$/i))), undefined),
  offset: z.catch(z.optional(z.number().check(z.int(), z.nonnegative())), undefined),
});
export type ApplicationsSearch = z.infer<typeof applicationsSearch>;
