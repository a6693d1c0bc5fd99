// The one table of the console: server-side sorting (the header buttons say which way, and
// aria-sort tells assistive technology), optional row selection, skeleton rows while a page
// loads, and the empty state in place of rows. Data comes from the API a page at a time; the
// table never holds more than one page, so a fleet of 100,000 renders like one of 10.
import { Fragment, type ReactNode } from "react";
import { ArrowDown, ArrowUp, ArrowUpDown } from "lucide-react";

export interface Column<Row, SortKey extends string = string> {
  id: string;
  /** text, or a visually hidden name for a column of buttons */
  header: ReactNode;
  cell: (row: Row) => ReactNode;
  /** the API's sort field for this column, when it can sort by it */
  sortKey?: SortKey;
  className?: string;
}

export interface SortState<SortKey extends string> {
  key: SortKey;
  order: "asc" | "desc";
}

export function DataTable<Row, SortKey extends string = string>({
  caption,
  columns,
  rows,
  rowKey,
  rowLabel,
  loading,
  loadingRows = 8,
  sort,
  onSort,
  selected,
  onSelectedChange,
  empty,
  details,
}: {
  /** the table's accessible name */
  caption: string;
  columns: Column<Row, SortKey>[];
  rows: Row[] | undefined;
  rowKey: (row: Row) => string;
  /** what a row's checkbox is called ("Select demo-0001") */
  rowLabel?: (row: Row) => string;
  loading?: boolean;
  loadingRows?: number;
  sort?: SortState<SortKey>;
  onSort?: (sort: SortState<SortKey>) => void;
  selected?: ReadonlySet<string>;
  onSelectedChange?: (next: Set<string>) => void;
  empty?: ReactNode;
  /** a row's opened details, in a full-width row under it (null: closed) */
  details?: (row: Row) => ReactNode;
}) {
  const selectable = !!selected && !!onSelectedChange;
  const pageKeys = rows?.map(rowKey) ?? [];
  const allOnPage = pageKeys.length > 0 && pageKeys.every((k) => selected?.has(k));
  const someOnPage = pageKeys.some((k) => selected?.has(k));

  function toggleAll() {
    const next = new Set(selected);
    for (const k of pageKeys) (allOnPage ? next.delete(k) : next.add(k));
    onSelectedChange!(next);
  }
  function toggle(key: string) {
    const next = new Set(selected);
    next.has(key) ? next.delete(key) : next.add(key);
    onSelectedChange!(next);
  }

  const colCount = columns.length + (selectable ? 1 : 0);
  return (
    <div className="table-wrap">
      <table className="table" aria-busy={loading || undefined}>
        <caption className="visually-hidden">{caption}</caption>
        <thead>
          <tr>
            {selectable && (
              <th className="col-check" scope="col">
                <input
                  type="checkbox"
                  aria-label="Select all rows on this page"
                  checked={allOnPage}
                  ref={(el) => {
                    if (el) el.indeterminate = someOnPage && !allOnPage;
                  }}
                  onChange={toggleAll}
                  disabled={pageKeys.length === 0}
                />
              </th>
            )}
            {columns.map((col) => {
              const active = sort && col.sortKey && sort.key === col.sortKey;
              return (
                <th
                  key={col.id}
                  scope="col"
                  className={col.className}
                  aria-sort={active ? (sort!.order === "asc" ? "ascending" : "descending") : col.sortKey ? "none" : undefined}
                >
                  {col.sortKey && onSort ? (
                    <button
                      type="button"
                      className="sort-button"
                      onClick={() => onSort({ key: col.sortKey!, order: active && sort!.order === "asc" ? "desc" : "asc" })}
                    >
                      {col.header}
                      {active ? sort!.order === "asc" ? <ArrowUp aria-hidden="true" /> : <ArrowDown aria-hidden="true" /> : <ArrowUpDown aria-hidden="true" className="faint" />}
                    </button>
                  ) : (
                    col.header
                  )}
                </th>
              );
            })}
          </tr>
        </thead>
        <tbody>
          {!rows && loading &&
            Array.from({ length: loadingRows }, (_, i) => (
              <tr key={`loading-${i}`} aria-hidden="true">
                {Array.from({ length: colCount }, (_, j) => (
                  <td key={j}>
                    <span className="skeleton" />
                  </td>
                ))}
              </tr>
            ))}
          {rows?.length === 0 && (
            <tr>
              <td colSpan={colCount}>{empty}</td>
            </tr>
          )}
          {rows?.map((row) => {
            const key = rowKey(row);
            const isSelected = selected?.has(key) ?? false;
            const opened = details?.(row);
            return (
              <Fragment key={key}>
                <tr aria-selected={selectable ? isSelected : undefined}>
                  {selectable && (
                    <td className="col-check">
                      <input type="checkbox" aria-label={rowLabel ? rowLabel(row) : "Select row"} checked={isSelected} onChange={() => toggle(key)} />
                    </td>
                  )}
                  {columns.map((col) => (
                    <td key={col.id} className={col.className}>
                      {col.cell(row)}
                    </td>
                  ))}
                </tr>
                {opened != null && opened !== false && (
                  <tr className="table__details-row">
                    <td colSpan={colCount}>{opened}</td>
                  </tr>
                )}
              </Fragment>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}
