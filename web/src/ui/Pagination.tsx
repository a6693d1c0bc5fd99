import { ChevronLeft, ChevronRight } from "lucide-react";
import { Button } from "./Button";

const numbers = new Intl.NumberFormat();

/** "51–100 of 100,000", previous/next and the page size; offsets as the API pages them. */
export function Pagination({ offset, limit, total, onOffset, onLimit, sizes = [25, 50, 100, 200], label = "Pages" }: {
  offset: number;
  limit: number;
  total: number | undefined;
  onOffset: (offset: number) => void;
  onLimit?: (limit: number) => void;
  sizes?: number[];
  label?: string;
}) {
  // Nothing to page through: the table's empty state says so.
  if (total === 0) return null;
  const count = total ?? 0;
  const first = count === 0 ? 0 : offset + 1;
  const last = Math.min(offset + limit, count);
  return (
    <nav className="pagination" aria-label={label}>
      <span className="num" aria-live="polite">
        {total === undefined ? "…" : `${numbers.format(first)}–${numbers.format(last)} of ${numbers.format(count)}`}
      </span>
      <div className="pagination__controls">
        {onLimit && (
          <label className="row">
            <span>Rows per page</span>
            <select className="select" value={limit} onChange={(e) => onLimit(Number(e.target.value))}>
              {sizes.map((s) => (
                <option key={s} value={s}>{s}</option>
              ))}
            </select>
          </label>
        )}
        <Button size="small" icon={<ChevronLeft />} aria-label="Previous page" disabled={offset === 0} onClick={() => onOffset(Math.max(0, offset - limit))} />
        <Button size="small" icon={<ChevronRight />} aria-label="Next page" disabled={offset + limit >= count} onClick={() => onOffset(offset + limit)} />
      </div>
    </nav>
  );
}
