import { describe, expect, it } from "vitest";
import { applicable, EMPTY_SOURCE, pollText, sourceBody, sourceProblems, valueText, whereText, type SourcePlan } from "./source-form";

const form = (patch: Partial<typeof EMPTY_SOURCE> = {}) => ({ ...EMPTY_SOURCE, name: "main", url: "https://git.example.com/fleet.git", ...patch });

describe("the config source form", () => {
  it("accepts a complete form and builds the API's body (no credential without authentication)", () => {
    expect(sourceProblems(form())).toEqual({});
    expect(sourceBody(form({ path: " fleet ", credential: "ignored" }))).toEqual({
      name: "main", url: "https://git.example.com/fleet.git", branch: "main", path: "fleet", authType: "NONE",
      prune: false, adopt: false, pruneLimit: 10, pollIntervalSeconds: 120,
    });
    expect(sourceBody(form({ authType: "TOKEN", credential: "t0ken", prune: true, pollIntervalSeconds: "0" }))).toMatchObject({ authType: "TOKEN", credential: "t0ken", prune: true, pollIntervalSeconds: 0 });
  });

  it("names the fields the API would refuse", () => {
    const problems = sourceProblems(form({ name: "x", url: "ftp://x", branch: " ", pruneLimit: "-1", pollIntervalSeconds: "10", authType: "TOKEN" }));
    expect(Object.keys(problems).sort()).toEqual(["branch", "credential", "name", "pollIntervalSeconds", "pruneLimit", "url"]);
    expect(sourceProblems(form({ pollIntervalSeconds: "30" }))).toEqual({});
  });
});

describe("the plan in words", () => {
  it("shows values and places", () => {
    expect(valueText(undefined)).toBe("(none)");
    expect(valueText("2.4.1")).toBe("2.4.1");
    expect(valueText({ pollSeconds: 60 })).toBe('{"pollSeconds":60}');
    expect(whereText({ file: "a.yaml", line: 3 })).toBe("a.yaml:3");
    expect(whereText({ file: null, line: null })).toBeNull();
    expect(pollText(120)).toBe("every 2 min");
    expect(pollText(0)).toMatch(/^no polling/);
  });

  it("offers the apply only for a plan that was made and refuses nothing", () => {
    const summary = { create: 1, update: 0, unchanged: 0, delete: 0, refused: 0, exists_unmanaged: 0 };
    const plan = (patch: Partial<SourcePlan>): SourcePlan => ({ commit: "abc", failure: null, summary, resources: [], ...patch });
    expect(applicable(plan({}))).toBe(true);
    expect(applicable(plan({ summary: { ...summary, refused: 1 } }))).toBe(false);
    expect(applicable(plan({ failure: "could not fetch", summary: null }))).toBe(false);
  });
});
