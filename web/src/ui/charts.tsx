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

/**
 * A percentage as a half-circle gauge (a meter for assistive technology), turning to the
 * warning colour at `warnAt` and the danger colour at `dangerAt` (fleet health's default
 * pressure threshold is 90 %). A value that was not reported reads "not reported".
 */
export function Gauge({ label, value, detail, warnAt = 75, dangerAt = 90 }: { label: string; value: number | undefined; detail?: ReactNode; warnAt?: number; dangerAt?: number }) {
  const shown = value === undefined ? undefined : Math.min(100, Math.max(0, value));
  const tone = shown === undefined ? "none" : shown >= dangerAt ? "danger" : shown >= warnAt ? "warning" : "ok";
  const text = shown === undefined ? "not reported" : percentFormat.format(shown / 100);
  const arc = "M 10 60 A 50 50 0 0 1 110 60";
  return (
    <div className={`gauge gauge--${tone}`} role="meter" aria-label={label} aria-valuemin={0} aria-valuemax={100} aria-valuenow={shown} aria-valuetext={text}>
      <svg viewBox="0 0 120 66" aria-hidden="true">
        <path d={arc} className="gauge__track" pathLength={100} />
        {shown !== undefined && shown > 0 && <path d={arc} className="gauge__fill" pathLength={100} strokeDasharray={`${shown} 100`} />}
      </svg>
      <div className="gauge__value num">{shown === undefined ? "–" : text}</div>
      <div className="gauge__label">{label}</div>
      {detail && <div className="gauge__detail">{detail}</div>}
    </div>
  );
}

const percentFormat = new Intl.NumberFormat(undefined, { style: "percent", maximumFractionDigits: 0 });

/** A number with its label, beside gauges (counts that have no 100 %). */
export function Stat({ label, value, detail, tone }: { label: string; value: ReactNode; detail?: ReactNode; tone?: "danger" | "warning" }) {
  return (
    <div className={tone ? `stat stat--${tone}` : "stat"}>
      <div className="stat__value num">{value}</div>
      <div className="stat__label">{label}</div>
      {detail && <div className="stat__detail">{detail}</div>}
    </div>
  );
}
