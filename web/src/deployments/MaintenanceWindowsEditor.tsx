// The maintenance windows of a deployment: weekly windows during which devices may install
// (and, optionally, windows for downloading ahead). Checked by the service's own rules
// (src/modules/rollout-engine/window-rules.ts, from which the API's schema is built), so the form
// refuses what the API refuses, in its words.
import { Plus, Trash2 } from "lucide-react";
import type { MaintenanceWindows, WeeklyWindow } from "../../../src/modules/rollout-engine/options";
import { WEEKDAYS, windowProblems as rulesProblems, type Weekday } from "../../../src/modules/rollout-engine/window-rules";
import { Button } from "../ui/Button";
import { described, Field } from "../ui/Field";

const DAY_NAMES: Record<Weekday, string> = { mon: "Mon", tue: "Tue", wed: "Wed", thu: "Thu", fri: "Fri", sat: "Sat", sun: "Sun" };
const WORKDAYS: Weekday[] = ["mon", "tue", "wed", "thu", "fri"];
const FIRST_WINDOW: WeeklyWindow = { days: WORKDAYS, start: "02:00", end: "04:00" };
// Every zone the browser knows (the service checks the same way, with Intl).
const TIME_ZONES: string[] = typeof Intl.supportedValuesOf === "function" ? Intl.supportedValuesOf("timeZone") : [];

/** Windows that start as the person's own nights of the working week. */
export function defaultWindows(): MaintenanceWindows {
  return { timeZone: Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC", windows: [FIRST_WINDOW] };
}

/** The problems of the windows, keyed `maintenanceWindows.<path>` as the API names them; {} when none. */
export function windowProblems(value: MaintenanceWindows | null): Record<string, string> {
  if (!value) return {};
  return Object.fromEntries(Object.entries(rulesProblems(value)).map(([path, message]) => [`maintenanceWindows.${path}`, message]));
}

interface EditorProps {
  value: MaintenanceWindows | null;
  onChange: (value: MaintenanceWindows | null) => void;
  errors: Record<string, string>;
  /** the checkbox (default: a deployment's "Install only in maintenance windows") */
  toggleLabel?: string;
  /** offer download windows (a deployment's; a job downloads nothing, its schema refuses them) */
  downloads?: boolean;
}

export function MaintenanceWindowsEditor({ value, onChange, errors, toggleLabel = "Install only in maintenance windows", downloads = true }: EditorProps) {
  const set = (patch: Partial<MaintenanceWindows>) => value && onChange({ ...value, ...patch });
  return (
    <div className="stack stack--tight">
      <label className="row">
        <input type="checkbox" checked={!!value} onChange={(e) => onChange(e.target.checked ? defaultWindows() : null)} />
        {toggleLabel}
      </label>
      {value && (
        <div className="stack maintenance-windows">
          <div className="grid grid--2">
            <Field id="windows-time-zone" label="Time zone" hint="IANA name; the windows are read in it" error={errors["maintenanceWindows.timeZone"]}>
              <input id="windows-time-zone" className="input" list="windows-time-zones" value={value.timeZone} onChange={(e) => set({ timeZone: e.target.value })} {...described("windows-time-zone", errors["maintenanceWindows.timeZone"], true)} />
              <datalist id="windows-time-zones">{TIME_ZONES.map((z) => <option key={z} value={z} />)}</datalist>
            </Field>
            <Field id="windows-time-zone-label" label="Device label with its own time zone (optional)" hint="a device whose label holds a valid zone uses it instead" error={errors["maintenanceWindows.timeZoneLabel"]}>
              <input id="windows-time-zone-label" className="input mono" value={value.timeZoneLabel ?? ""} placeholder="tz"
                onChange={(e) => set({ timeZoneLabel: e.target.value.trim() || undefined })} {...described("windows-time-zone-label", errors["maintenanceWindows.timeZoneLabel"], true)} />
            </Field>
          </div>
          <WindowList kind="windows" noun={downloads ? "install" : ""} windows={value.windows} errors={errors} onChange={(windows) => set({ windows })} />
          {downloads && <label className="row">
            <input type="checkbox" checked={value.downloadWindows !== undefined} onChange={(e) => set({ downloadWindows: e.target.checked ? [{ days: [...WEEKDAYS], start: "20:00", end: "06:00" }] : undefined })} />
            Download only in windows too (otherwise at any time ahead of an install window)
          </label>}
          {downloads && value.downloadWindows && (
            <WindowList kind="downloadWindows" noun="download" windows={value.downloadWindows} errors={errors} onChange={(downloadWindows) => set({ downloadWindows })} />
          )}
        </div>
      )}
    </div>
  );
}

/** `noun` tells install from download windows; "" where there is one kind (a job's). */
function WindowList({ kind, noun, windows, errors, onChange }: { kind: "windows" | "downloadWindows"; noun: "install" | "download" | ""; windows: WeeklyWindow[]; errors: Record<string, string>; onChange: (w: WeeklyWindow[]) => void }) {
  const change = (i: number, patch: Partial<WeeklyWindow>) => onChange(windows.map((w, j) => (j === i ? { ...w, ...patch } : w)));
  const listError = errors[`maintenanceWindows.${kind}`];
  const title = noun ? `${noun[0].toUpperCase()}${noun.slice(1)} windows` : "Windows";
  const article = noun === "install" ? "an install" : noun === "download" ? "a download" : "a";
  return (
    <section className="stack stack--tight" aria-label={title}>
      <h4>{title}</h4>
      {windows.map((w, i) => {
        const name = `${title.slice(0, -1)} ${i + 1}`;
        const id = `${kind}-${i}`;
        const error = errors[`maintenanceWindows.${kind}.${i}`] ?? errors[`maintenanceWindows.${kind}.${i}.start`] ?? errors[`maintenanceWindows.${kind}.${i}.end`];
        return (
          <fieldset key={i} className="window-row" aria-describedby={error ? `${id}-error` : undefined}>
            <legend>{name}</legend>
            <div className="row window-row__days" role="group" aria-label={`${name} days`}>
              {WEEKDAYS.map((day) => (
                <label key={day} className="chip-toggle">
                  <input type="checkbox" checked={w.days.includes(day)}
                    onChange={(e) => change(i, { days: e.target.checked ? WEEKDAYS.filter((d) => d === day || w.days.includes(d)) : w.days.filter((d) => d !== day) })} />
                  {DAY_NAMES[day]}
                </label>
              ))}
            </div>
            <div className="row">
              <label htmlFor={`${id}-start`}>From</label>
              <input id={`${id}-start`} className="input input--time" type="time" aria-label={`${name} opens at`} value={w.start} onChange={(e) => change(i, { start: e.target.value })} />
              <label htmlFor={`${id}-end`}>to</label>
              <input id={`${id}-end`} className="input input--time" type="time" aria-label={`${name} closes at`} value={w.end} onChange={(e) => change(i, { end: e.target.value })} />
              {windows.length > 1 && <Button size="small" variant="ghost" icon={<Trash2 />} aria-label={`Remove ${name.toLowerCase()}`} onClick={() => onChange(windows.filter((_, j) => j !== i))} />}
            </div>
            {error && <span id={`${id}-error`} className="field__error">{error}</span>}
          </fieldset>
        );
      })}
      {listError && <span className="field__error">{listError}</span>}
      <div>
        <Button size="small" icon={<Plus />} onClick={() => onChange([...windows, FIRST_WINDOW])}>Add {article} window</Button>
      </div>
    </section>
  );
}

/** One line for the review: "Mon-Fri 02:00-04:00, Sat 00:00-06:00 (Europe/Berlin)". */
export function describeWindows(value: MaintenanceWindows): string {
  const days = (w: WeeklyWindow) => (w.days.length === 7 ? "every day" : w.days.map((d) => DAY_NAMES[d]).join(" "));
  return `${value.windows.map((w) => `${days(w)} ${w.start}–${w.end}`).join(", ")} (${value.timeZone}${value.timeZoneLabel ? `, or the device's ${value.timeZoneLabel} label` : ""})`;
}
