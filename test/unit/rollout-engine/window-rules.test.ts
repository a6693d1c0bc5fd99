// The console checks maintenance windows with window-rules.ts; the API with the schema of
// options.ts built from the same rules. Over many windows, good and bad, both agree: the schema
// accepts exactly what the rules accept, and each of its problems is the rules' problem at the
// same path, in the same words.
import { describe, expect, it } from "vitest";
import { maintenanceWindows } from "../../../src/modules/rollout-engine/options.js";
import { WEEKDAYS, windowProblems } from "../../../src/modules/rollout-engine/window-rules.js";

const CLOCKS = ["00:00", "02:00", "23:59", "24:00", "7:00", "25:00", "12:60", ""];
const ZONES = ["Europe/Berlin", "UTC", "Mars/Olympus", ""];
const DAYS = [[], ["mon"], [...WEEKDAYS], ["sat", "sun"]];

function* cases() {
  let n = 0;
  for (const timeZone of ZONES) {
    for (const start of CLOCKS) {
      for (const end of CLOCKS) {
        const days = DAYS[n++ % DAYS.length];
        yield { timeZone, windows: [{ days, start, end }] };
        yield { timeZone, windows: [{ days: ["mon"], start: "01:00", end: "02:00" }], downloadWindows: [{ days, start, end }] };
      }
    }
  }
  yield { timeZone: "UTC", windows: [] };
  yield { timeZone: "UTC", windows: Array.from({ length: 51 }, () => ({ days: ["mon"], start: "01:00", end: "02:00" })) };
}

describe("maintenance window rules = the API's schema", () => {
  it("accepts and refuses the same windows, with the same message at the same path", () => {
    let checked = 0;
    for (const value of cases()) {
      const rules = windowProblems(value);
      const parsed = maintenanceWindows.safeParse(value);
      expect(parsed.success, JSON.stringify(value)).toBe(Object.keys(rules).length === 0);
      if (!parsed.success) {
        for (const issue of parsed.error.issues) {
          // An empty time zone fails the schema's min(1) before the zone check; the rules say it is no zone.
          if (issue.path.join(".") === "timeZone" && value.timeZone === "") continue;
          expect(rules[issue.path.join(".")], `${JSON.stringify(value)} at ${issue.path.join(".")}`).toBe(issue.message);
        }
      }
      checked++;
    }
    expect(checked).toBeGreaterThan(250);
  });
});
