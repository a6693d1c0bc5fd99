// The rule form against the API's own schema: a form without problems is a body the API
// accepts, and every problem the form names is one the API refuses.
import { describe, expect, it } from "vitest";
import { createRuleInput } from "../../../src/modules/alerts/schemas";
import { METRIC_NAMES } from "../../../src/modules/telemetry/metrics";
import { EMPTY_RULE, formOfRule, ruleBody, ruleProblems, type RuleForm } from "./rule-form";
import { METRIC_LABEL, type AlertRule } from "./types";

const form = (over: Partial<RuleForm>): RuleForm => ({ ...EMPTY_RULE, name: "Hot CPU", ...over });
const TARGET = "7c9e6679-7425-40de-944b-e07fc1f90ae7";

const cases: Array<[string, Partial<RuleForm>]> = [
  ["threshold defaults", {}],
  ["threshold with selector and targets", { selector: "site=berlin,tier=edge", targetIds: [TARGET], severity: "critical" }],
  ["empty name", { name: "  " }],
  ["long name", { name: "x".repeat(101) }],
  ["threshold not a number", { threshold: "ninety" }],
  ["negative threshold", { threshold: "-5" }],
  ["fraction duration", { durationSeconds: "2.5" }],
  ["duration too long", { durationSeconds: String(7 * 86_400 + 1) }],
  ["latest snapshot", { durationSeconds: "0" }],
  ["offline", { type: "device_offline", durationSeconds: "600" }],
  ["offline negative", { type: "device_offline", durationSeconds: "-1" }],
  ["failed deployment", { type: "deployment_failed", durationSeconds: "junk" }],
  ["certificate", { type: "certificate_expiring", withinDays: "14" }],
  ["certificate zero days", { type: "certificate_expiring", withinDays: "0" }],
  ["certificate too many days", { type: "certificate_expiring", withinDays: "3651" }],
  ["config source failing", { type: "config_source_failing", consecutiveFailures: "3", sourceNames: ["main"] }],
  ["config source failing, every source, a selector left from another type", { type: "config_source_failing", selector: "site" }],
  ["config source failing zero", { type: "config_source_failing", consecutiveFailures: "0" }],
  ["config source failing too many", { type: "config_source_failing", consecutiveFailures: "101" }],
  ["bad selector", { selector: "site" }],
  ["bad selector key", { selector: "-x=1" }],
  ["cooldown negative", { cooldownSeconds: "-1" }],
  ["long description", { description: "d".repeat(501) }],
];

describe("alert rule form", () => {
  it.each(cases)("%s: the form's problems agree with the API's schema", (_, over) => {
    const f = form(over);
    const problems = ruleProblems(f);
    const parsed = createRuleInput.safeParse(ruleBody(f));
    const selectorParses = !problems.selector;
    if (Object.keys(problems).length === 0) expect(parsed.error?.issues ?? []).toEqual([]);
    else if (selectorParses) {
      expect(parsed.success).toBe(false);
      // The API names the same field the form puts its problem next to.
      const apiFields = parsed.error!.issues.map((i) => String(i.path.at(-1)));
      for (const field of Object.keys(problems)) expect(apiFields).toContain(field === "selector" ? "labelSelector" : field);
    }
  });

  it("names an empty threshold instead of sending it as 0", () => {
    expect(ruleProblems(form({ threshold: " " })).threshold).toBe("must be a number");
  });

  it("offers every metric the API knows, and no other", () => {
    expect(Object.keys(METRIC_LABEL).sort()).toEqual([...METRIC_NAMES].sort());
  });

  it("sends no label selector for a config source rule (sources have no labels)", () => {
    const body = ruleBody(form({ type: "config_source_failing", selector: "site=berlin", consecutiveFailures: "2" }));
    expect(body.labelSelector).toEqual({});
    expect(body.condition).toEqual({ type: "config_source_failing", consecutiveFailures: 2, sourceNames: [] });
  });

  it("round-trips a stored rule through the form", () => {
    const rule = {
      id: TARGET, name: "Offline in Oslo", description: "night shift", summary: "", firingCount: 0, lastEvaluatedAt: null, managedBy: null, managedCommit: null, createdAt: "", updatedAt: "",
      condition: { type: "device_offline", durationSeconds: 600 }, labelSelector: { site: "oslo" }, severity: "critical", cooldownSeconds: 60, enabled: false, targetIds: [TARGET],
    } as AlertRule;
    expect(ruleBody(formOfRule(rule))).toEqual({
      name: "Offline in Oslo", description: "night shift", condition: { type: "device_offline", durationSeconds: 600 },
      labelSelector: { site: "oslo" }, severity: "critical", cooldownSeconds: 60, enabled: false, targetIds: [TARGET],
    });
  });
});
