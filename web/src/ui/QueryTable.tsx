// A list page's block, one rule set for all: exactly one of the error (an ErrorState in place
// of the rows: the API's message and a retry), the loading skeleton, the empty state ("No
// devices match these filters" with Clear filters when filters hide everything) or the rows;
// the table is aria-busy while a page is fetched, and the pagination follows it.
import type { ReactNode } from "react";
import type { UseQueryResult } from "@tanstack/react-query";
import { Button } from "./Button";
import { DataTable, type Column, type SortState } from "./DataTable";
import { listView } from "./list-view";
import { Pagination } from "./Pagination";
import { Empty, ErrorState } from "./states";

export interface Page {
  offset: number;
  limit: number;
  onOffset: (offset: number) => void;
  onLimit?: (limit: number) => void;
  sizes?: number[];
}

type Listed<Row> = { items: Row[]; total?: number };

export function QueryTable<Row, SortKey extends string = string, Data = Listed<Row>>({
  query, what, caption, columns, rowKey, rows: rowsOf, total: totalOf, page, pageLabel, empty, noMatch, filtered, onClearFilters, sort, onSort, selection, loadingRows, details,
}: {
  query: UseQueryResult<Data>;
  /** what the list holds, for the error and filtered-empty states ("the devices" / "devices") */
  what: string;
  caption: string;
  columns: Column<Row, SortKey>[];
  rowKey: (row: Row) => string;
  /** the rows of a page (default: `items`) */
  rows?: (data: Data) => Row[];
  /** all rows across pages (default: `total`) */
  total?: (data: Data) => number | undefined;
  /** paging; none: no pagination under the table */
  page?: Page;
  /** the pagination's accessible name (default: "<caption> pages") */
  pageLabel?: string;
  empty: ReactNode;
  /** the filtered-empty state's title (default: "No <what> match these filters") */
  noMatch?: string;
  /** filters are on: an empty page says that nothing matches them */
  filtered?: boolean;
  onClearFilters?: () => void;
  sort?: SortState<SortKey>;
  onSort?: (sort: SortState<SortKey>) => void;
  selection?: { selected: ReadonlySet<string>; onChange: (next: Set<string>) => void; rowLabel: (row: Row) => string };
  loadingRows?: number;
  /** a row's opened details under it (null: closed) */
  details?: (row: Row) => ReactNode;
}) {
  const data = query.data;
  const rows = data === undefined ? undefined : rowsOf ? rowsOf(data) : (data as Listed<Row>).items;
  const view = listView(query, rows, filtered);
  if (view === "error") return <ErrorState error={query.error} what={what} retry={() => void query.refetch()} />;
  const total = data === undefined ? undefined : totalOf ? totalOf(data) : (data as Listed<Row>).total;
  return (
    <>
      <DataTable
        caption={caption}
        columns={columns}
        rows={rows}
        rowKey={rowKey}
        rowLabel={selection?.rowLabel}
        loading={query.isFetching}
        loadingRows={loadingRows}
        sort={sort}
        onSort={onSort}
        selected={selection?.selected}
        onSelectedChange={selection?.onChange}
        details={details}
        empty={view === "filtered-empty" ? (
          <Empty title={noMatch ?? `No ${what.replace(/^the /, "")} match these filters`} action={onClearFilters && <Button onClick={onClearFilters}>Clear filters</Button>} />
        ) : empty}
      />
      {page && <Pagination label={pageLabel ?? `${caption} pages`} offset={page.offset} limit={page.limit} total={total} onOffset={page.onOffset} onLimit={page.onLimit} sizes={page.sizes} />}
    </>
  );
}
