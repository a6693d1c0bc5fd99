// One paging convention for every list: limit (default 50, max 200) and offset in, total
// and hasMore out, beside the list field the spec names (`data` or `items`).
import { z } from "zod";

export const MAX_PAGE_SIZE = 200;
export const DEFAULT_PAGE_SIZE = 50;

/** Query-string paging; numbers arrive as strings over REST and are coerced. */
export const pagingInput = {
  limit: z.coerce.number().int().min(1).max(MAX_PAGE_SIZE).default(DEFAULT_PAGE_SIZE),
  offset: z.coerce.number().int().min(0).max(1_000_000_000).default(0),
};

export function pageOf<T>(items: T[], total: number, offset: number) {
  return { items, total, hasMore: offset + items.length < total };
}

export const pageOutput = <T extends z.ZodTypeAny>(item: T) =>
  z.object({ items: z.array(item), total: z.number().int(), hasMore: z.boolean() });
