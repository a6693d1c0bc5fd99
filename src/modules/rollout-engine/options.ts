// The pacing options a rollout takes beside its batches, shared by deployments and jobs:
// maintenance windows (when devices may be changed) and the disruption budget (how many
// devices of one label value may be disrupted at once). Shapes and validation only: the
// windows' arithmetic is windows.ts, the budget's budget.ts and budget-admission.ts.
import { z } from "zod";
import { labelKey } from "../devices/labels.js";
import { CLOCK_END, CLOCK_END_MESSAGE, CLOCK_START, CLOCK_START_MESSAGE, isTimeZone, MAX_WINDOWS, neverOpens, TIME_ZONE_MESSAGE, WEEKDAYS } from "./window-rules.js";

export { WEEKDAYS, type Weekday } from "./window-rules.js";
const clockStart = z.string().regex(CLOCK_START, CLOCK_START_MESSAGE);
const clockEnd = z.string().regex(CLOCK_END, CLOCK_END_MESSAGE);

export const weeklyWindow = z
  .object({
    days: z.array(z.enum(WEEKDAYS)).max(7).describe("the days the window opens on (in the window's time zone)"),
    start: clockStart.describe("opens at (local time)"),
    end: clockEnd.describe("closes at (local time); before start: the window closes the next day"),
  })
  .strict();
export type WeeklyWindow = z.infer<typeof weeklyWindow>;

function checkWindows(windows: WeeklyWindow[], key: string, ctx: z.RefinementCtx) {
  windows.forEach((w, i) => {
    const why = neverOpens(w);
    if (why) ctx.addIssue({ code: "custom", path: [key, i], message: why });
  });
}

const windowFields = {
  timeZone: z.string().min(1).max(100).refine(isTimeZone, TIME_ZONE_MESSAGE).describe("IANA time zone the windows are read in"),
  timeZoneLabel: labelKey.optional().describe("a device label holding the device's own IANA time zone (its value wins over timeZone when valid)"),
  windows: z.array(weeklyWindow).min(1, "name at least one window").max(MAX_WINDOWS, `at most ${MAX_WINDOWS} windows`),
};

/** A deployment's windows: install windows, and optionally download windows ahead of them. */
export const maintenanceWindows = z
  .object({
    ...windowFields,
    windows: windowFields.windows.describe("when devices may install or remove"),
    downloadWindows: z.array(weeklyWindow).max(MAX_WINDOWS, `at most ${MAX_WINDOWS} windows`).optional().describe("when devices may download ahead of an install window (default: any time)"),
  })
  .strict()
  .superRefine((v, ctx) => {
    checkWindows(v.windows, "windows", ctx);
    checkWindows(v.downloadWindows ?? [], "downloadWindows", ctx);
  })
  .meta({ example: { timeZone: "Europe/Berlin", timeZoneLabel: "tz", windows: [{ days: ["mon", "tue", "wed", "thu", "fri"], start: "02:00", end: "04:00" }], downloadWindows: [{ days: ["mon", "tue", "wed", "thu", "fri", "sat", "sun"], start: "20:00", end: "06:00" }] } })
  .describe("recurring weekly windows during which devices may install or remove; outside them a device is told what to download but not to install");
export type MaintenanceWindows = z.infer<typeof maintenanceWindows>;

/** A job's windows: the same rules without download windows (an action downloads nothing). */
export const actionWindows = z
  .object({ ...windowFields, windows: windowFields.windows.describe("when devices may be handed the action") })
  .strict()
  .superRefine((v, ctx) => checkWindows(v.windows, "windows", ctx))
  .meta({ example: { timeZone: "Europe/Berlin", timeZoneLabel: "tz", windows: [{ days: ["sat", "sun"], start: "01:00", end: "05:00" }] } })
  .describe("recurring weekly windows: a device is handed the action only while one is open (read in its own time zone when timeZoneLabel names one); outside them it waits");
export type ActionWindows = z.infer<typeof actionWindows>;

/** The part of either that says when a device may be changed. */
export type WindowOptions = Pick<MaintenanceWindows, "timeZone" | "timeZoneLabel" | "windows">;

/**
 * The disruption budget's schema, a new one at every call: trpc-to-openapi makes the number
 * fields of a REST input coercing in place (deployments/strategy.ts batchThreshold), so
 * deployments and jobs each take their own. `busy` says what counts against a group's limit.
 */
export function disruptionBudgetSchema(busy: string) {
  return z
    .object({
      groupBy: z.array(labelKey).max(5).default([]).describe("label keys: one group per combination of their values (none: all the rollout's devices are one group)"),
      maxUnavailable: z
        .union([
          z.object({ count: z.number().int().min(1).max(1_000_000) }).strict(),
          z.object({ percent: z.number().min(0.1).max(100) }).strict(),
        ])
        .describe(`devices of one group that may be ${busy} at once: a count, or a percent (rounded up) of the group`),
    })
    .strict()
    .meta({ example: { groupBy: ["site"], maxUnavailable: { count: 2 } } });
}

export const disruptionBudget = disruptionBudgetSchema("between being told to install and running (or failed)")
  .describe("paces the rollout: devices held back are waiting_for_budget");
export type DisruptionBudget = z.infer<typeof disruptionBudget>;
