// Small charts in plain SVG: the fleet's status donut and horizontal bars. Every chart has a
// text equivalent (its legend with the numbers), so nothing depends on colour or sight alone.
import type { ReactNode } from "react";

export interface Slice {
  key: string;
  label: string;
  value: number;
  color: string;
}

const numbers = new Intl.NumberFormat();

export function Donut({ slices, label, center }: { slices: Slice[]; label: string; center?: ReactNode }) {
  const total = slices.reduce((sum, s) => sum + s.value, 0);
  const radius = 42;
  const circumference = 2 * Math.PI * radius;
  let offset = 0;
  return (
    <div className="donut">
      <svg viewBox="0 0 100 100" role="img" aria-label={`${label}: ${slices.map((s) => `${s.label} ${s.value}`).join(", ")}`}>
        <circle cx="50" cy="50" r={radius} fill="none" stroke="var(--surface-2)" strokeWidth="12" />
        {total > 0 &&
          slices.map((s) => {
            const length = (s.value / total) * circumference;
            const dash = `${length} ${circumference - length}`;
            const el = (
              <circle key={s.key} cx="50" cy="50" r={radius} fill="none" stroke={s.color} strokeWidth="12"
                strokeDasharray={dash} strokeDashoffset={-offset} transform="rotate(-90 50 50)" />
            );
            offset += length;
            return el;
          })}
      </svg>
      {center && <div className="donut__center">{center}</div>}
    </div>
  );
}

export function Legend({ slices, onPick }: { slices: Slice[]; onPick?: (key: string) => ReactNode }) {
  return (
    <ul className="legend">
      {slices.map((s) => (
        <li key={s.key}>
          <span className="legend__swatch" style={{ background: s.color }} aria-hidden="true" />
          <span className="legend__label">{onPick ? onPick(s.key) : s.label}</span>
          <span className="legend__value num">{numbers.format(s.value)}</span>
        </li>
      ))}
    </ul>
  );
}

/** A horizontal bar per row, scaled to the largest; the label and count stay readable as text. */
export function Bars({ rows, label }: { rows: { key: string; label: ReactNode; value: number; color?: string; segments?: Slice[] }[]; label: string }) {
  const max = Math.max(1, ...rows.map((r) => r.value));
  return (
    <ul className="bars" aria-label={label}>
      {rows.map((r) => (
        <li key={r.key} className="bars__row">
          <span className="bars__label">{r.label}</span>
          <span className="bars__track" aria-hidden="true">
            {r.segments ? (
              r.segments.map((s) => s.value > 0 && (
                <span key={s.key} className="bars__fill" style={{ width: `${(s.value / max) * 100}%`, background: s.color }} title={`${s.label}: ${s.value}`} />
              ))
            ) : (
              <span className="bars__fill" style={{ width: `${(r.value / max) * 100}%`, background: r.color ?? "var(--chart-1)" }} />
            )}
          </span>
          <span className="bars__value num">{numbers.format(r.value)}</span>
        </li>
      ))}
    </ul>
  );
}

/** A progress bar with its numbers in words for assistive technology. */
export function Progress({ value, max, label, segments }: { value: number; max: number; label: string; segments?: Slice[] }) {
  const pct = max > 0 ? Math.round((value / max) * 100) : 0;
  return (
    <div role="progressbar" aria-label={label} aria-valuemin={0} aria-valuemax={max} aria-valuenow={value} aria-valuetext={`${value} of ${max} (${pct}%)`} className="bar-track">
      {segments
        ? segments.map((s) => s.value > 0 && <span key={s.key} className="bar-fill" style={{ width: `${(s.value / Math.max(1, max)) * 100}%`, background: s.color }} />)
        : <span className="bar-fill" style={{ width: `${pct}%`, background: "var(--chart-2)" }} />}
    </div>
  );
}
