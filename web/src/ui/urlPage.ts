// Paging kept in the URL (`offset`, `limit`), for list pages whose view can be shared as a link:
// the first page and the default page size are left out of it; a new page size starts at the
// first page again.
import type { Page } from "./QueryTable";

type PageSearch<L extends number> = { offset?: number; limit?: L };

export function urlPage<L extends number>(
  search: PageSearch<L>,
  setSearch: (patch: PageSearch<L>, resetPage?: boolean) => unknown,
  defaultLimit: L,
  sizes?: number[],
): Page & { input: { limit: number; offset: number } } {
  const offset = search.offset ?? 0;
  const limit = search.limit ?? defaultLimit;
  return {
    offset,
    limit,
    input: { limit, offset },
    sizes,
    onOffset: (next) => void setSearch({ offset: next || undefined }, false),
    onLimit: (next) => void setSearch({ limit: next === defaultLimit ? undefined : (next as L) }),
  };
}
