// The form's state to the API's create / update input: options not edited field by field are
// kept, a cleared option is sent as null, a stored deployment comes back into the form as it was.
import { describe, expect, it } from "vitest";
import { createDeploymentInput, updateDeploymentInput } from "../../../src/modules/deployments/schemas";
import { createInput, draftOf, EMPTY_DRAFT, targetProblems, updateInput, type DeploymentDraft } from "./draft";
import type { Deployment } from "./types";

const APP = "7d0b0c39-3f55-4c3e-9a53-3f0d1f0c1a11";
const ID = "0b4f6f5e-8a57-4b8e-a0b3-6d1c0c6f2e22";
const windows = { timeZone: "Europe/Berlin", windows: [{ days: ["mon" as const], start: "02:00", end: "04:00" }] };

const stored = {
  id: ID, name: "gateway", description: null, applicationId: APP, version: "1.0.0", profileId: "compose",
  parameters: { mode: "safe", apiToken: "********" }, secretParameterNames: ["apiToken"],
  target: { labelSelector: { site: "turin" } },
  strategy: { type: "staged", canary: { percent: 10 }, batches: [{ count: 5 }], successThreshold: 90, failureThreshold: 20, autoAdvance: true, batchTimeoutSeconds: 600 },
  retry: { maxAttempts: 3, initialDelaySeconds: 30, maxDelaySeconds: 300 }, startAt: null, maintenanceWindows: windows,
  disruptionBudget: { groupBy: ["site"], maxUnavailable: { percent: 25 } }, continuous: true, onLeave: "keep",
} as unknown as Deployment;

describe("deployment draft", () => {
  it("creates with only what was chosen, in a shape the API's schema takes", () => {
    const draft: DeploymentDraft = { ...EMPTY_DRAFT, name: " gw ", applicationId: APP, version: "1.0.0", profileId: "compose", selector: "site=turin" };
    const input = createInput(draft, { mode: "fast" });
    expect(input).toEqual({ name: "gw", applicationId: APP, version: "1.0.0", profileId: "compose", parameters: { mode: "fast" }, target: { labelSelector: { site: "turin" } }, strategy: { type: "all-at-once" } });
    expect(createDeploymentInput.safeParse(input).success).toBe(true);
  });

  it("edits without losing the options: a stored deployment comes back unchanged, removed options are cleared", () => {
    const draft = draftOf(stored, { mode: "safe" });
    const same = updateInput(ID, draft, stored, undefined);
    expect(updateDeploymentInput.safeParse(same).success).toBe(true);
    expect(same).toMatchObject({ strategy: stored.strategy, retry: stored.retry, disruptionBudget: stored.disruptionBudget, continuous: true, onLeave: "keep", target: stored.target });
    expect(same).not.toHaveProperty("parameters");
    expect(same).not.toHaveProperty("maintenanceWindows");
    expect(same).not.toHaveProperty("startAt");

    const cleared = updateInput(ID, { ...draft, retry: { ...draft.retry, enabled: false }, budget: { ...draft.budget, enabled: false }, maintenanceWindows: null, continuous: false }, stored, undefined);
    expect(cleared).toMatchObject({ retry: null, disruptionBudget: null, maintenanceWindows: null, continuous: false });
  });

  it("names a target's problem as the API would", () => {
    expect(targetProblems({ ...EMPTY_DRAFT, selector: "" })).toEqual({ selector: "name at least one label: an empty selector would match every device" });
    expect(targetProblems({ ...EMPTY_DRAFT, selector: "site" }).selector).toMatch(/expected key=value/);
    expect(targetProblems({ ...EMPTY_DRAFT, targetKind: "devices" })).toEqual({ devices: "pick at least one device" });
    expect(targetProblems({ ...EMPTY_DRAFT, selector: "site=turin" })).toEqual({});
  });
});
