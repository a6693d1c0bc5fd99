// Which one view a list shows, in this order: the error (in place of the rows, with a retry),
// the loading skeleton, the empty state (filtered: "no match" with Clear filters), or the rows.
export type ListView = "error" | "loading" | "filtered-empty" | "empty" | "rows";

export function listView(query: { isError: boolean; isPending: boolean }, rows: readonly unknown[] | undefined, filtered = false): ListView {
  if (query.isError) return "error";
  if (query.isPending || !rows) return "loading";
  if (rows.length === 0) return filtered ? "filtered-empty" : "empty";
  return "rows";
}
