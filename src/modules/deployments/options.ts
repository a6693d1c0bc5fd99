// The rollout options a deployment may carry beside its strategy (docs/deployments.md,
// "Rollout options"): automatic retries, a scheduled start, maintenance windows, a disruption
// budget and continuous targets. Shapes and validation only; the rules that apply them are
// pure functions in retry.ts (and the window / budget modules), applied by the service.
import { z } from "zod";
import { labelKey } from "../devices/labels.js";
import { CLOCK_END, CLOCK_END_MESSAGE, CLOCK_START, CLOCK_START_MESSAGE, isTimeZone, MAX_WINDOWS, neverOpens, TIME_ZONE_MESSAGE, WEEKDAYS } from "./window-rules.js";

export const retryOptions = z
  .object({
    maxAttempts: z.number().int().min(1).max(20).describe("attempts in all, the first one included (1: never retry)"),
    initialDelaySeconds: z.number().int().min(1).max(86_400).describe("delay before the second attempt; doubles with every further attempt"),
    maxDelaySeconds: z.number().int().min(1).max(7 * 86_400).describe("the delay never grows beyond this"),
  })
  .strict()
  .superRefine((v, ctx) => {
    if (v.initialDelaySeconds > v.maxDelaySeconds) {
      ctx.addIssue({ code: "custom", path: ["initialDelaySeconds"], message: `the first retry delay (${v.initialDelaySeconds}s) is above maxDelaySeconds (${v.maxDelaySeconds}s)` });
    }
  })
  .meta({ example: { maxAttempts: 4, initialDelaySeconds: 60, maxDelaySeconds: 900 } })
  .describe("a device that reports failed is given the install again after an exponentially growing delay (with jitter), up to maxAttempts");
export type RetryOptions = z.infer<typeof retryOptions>;

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

export const maintenanceWindows = z
  .object({
    timeZone: z.string().min(1).max(100).refine(isTimeZone, TIME_ZONE_MESSAGE).describe("IANA time zone the windows are read in"),
    timeZoneLabel: labelKey.optional().describe("a device label holding the device's own IANA time zone (its value wins over timeZone when valid)"),
    windows: z.array(weeklyWindow).min(1, "name at least one window").max(MAX_WINDOWS, `at most ${MAX_WINDOWS} windows`).describe("when devices may install or remove"),
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

export const disruptionBudget = z
  .object({
    groupBy: z.array(labelKey).max(5).default([]).describe("label keys: one group per combination of their values (none: the whole deployment is one group)"),
    maxUnavailable: z
      .union([
        z.object({ count: z.number().int().min(1).max(1_000_000) }).strict(),
        z.object({ percent: z.number().min(0.1).max(100) }).strict(),
      ])
      .describe("devices of one group that may be between being told to install and running (or failed) at once: a count, or a percent (rounded up) of the group"),
  })
  .strict()
  .meta({ example: { groupBy: ["site"], maxUnavailable: { count: 2 } } })
  .describe("paces the rollout: devices held back are waiting_for_budget");
export type DisruptionBudget = z.infer<typeof disruptionBudget>;

export const ON_LEAVE = ["remove", "keep"] as const;

const startAt = z.iso
  .datetime({ offset: true })
  .describe("the deployment starts itself at this time (ISO 8601); editable or cancellable (null) until then")
  .meta({ example: "2026-12-01T02:00:00Z" });

/** The options' fields of a create input; `startAt` in the past is refused by refineOptions. */
export const optionFields = {
  retry: retryOptions.optional(),
  startAt: startAt.optional(),
  maintenanceWindows: maintenanceWindows.optional(),
  disruptionBudget: disruptionBudget.optional(),
  continuous: z.boolean().pipe(z.boolean()).optional().describe("a standing intent: devices that start matching the label selector later get the application too"),
  onLeave: z.enum(ON_LEAVE).optional().describe("continuous: a device that stops matching removes the application (remove, the default) or keeps it"),
};

/** The same, nullable where a PATCH may clear them. */
export const optionUpdateFields = {
  retry: retryOptions.nullable().optional(),
  startAt: startAt.nullable().optional(),
  maintenanceWindows: maintenanceWindows.nullable().optional(),
  disruptionBudget: disruptionBudget.nullable().optional(),
  continuous: optionFields.continuous,
  onLeave: optionFields.onLeave,
};

interface OptionsInput {
  startAt?: string | null;
  continuous?: boolean;
  target?: { deviceIds?: string[] };
}

/** Cross-field rules: a scheduled start lies ahead, and only a label selector can be continuous. */
export function refineOptions(v: OptionsInput, ctx: z.RefinementCtx) {
  if (v.startAt && Date.parse(v.startAt) <= Date.now()) ctx.addIssue({ code: "custom", path: ["startAt"], message: "startAt lies in the past" });
  if (v.continuous && v.target?.deviceIds) ctx.addIssue({ code: "custom", path: ["continuous"], message: "only a labelSelector target can be continuous (a device list never changes)" });
}
