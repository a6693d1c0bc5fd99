import { describe, expect, it } from "vitest";
import { EMPTY_FORM, formOf, formProblems, formatDuration, gitBody, globalBody, intervalText, ociBody, parseRepositories } from "./forms";

const form = (over: Partial<typeof EMPTY_FORM>) => ({ ...EMPTY_FORM, name: "Catalog", url: "http://127.0.0.1:9000/apps.git", ...over });

describe("registry forms", () => {
  it("sends a credential only when one was typed, never for NONE", () => {
    expect(gitBody(form({ authType: "TOKEN", credential: "" }))).not.toHaveProperty("credential");
    expect(gitBody(form({ authType: "NONE", credential: "left-over" }))).not.toHaveProperty("credential");
    expect(gitBody(form({ authType: "BASIC", credential: "u:p", path: "", branch: " dev " }))).toEqual({
      name: "Catalog", url: "http://127.0.0.1:9000/apps.git", authType: "BASIC", credential: "u:p", syncIntervalMinutes: 60, branch: "dev", path: "/",
    });
  });

  it("reads repositories one per line or comma-separated, without duplicates", () => {
    expect(parseRepositories("edge/a\n edge/b, edge/a\n\n")).toEqual(["edge/a", "edge/b"]);
    expect(ociBody(form({ repositories: "x/y", description: "  " }))).toMatchObject({ repositories: ["x/y"], verifyTls: true });
    expect(ociBody(form({ description: "mirror" }))).toMatchObject({ description: "mirror" });
    expect(globalBody(form({ mandatory: true, priority: "5" }))).toMatchObject({ mandatory: true, priority: 5 });
  });

  it("names the field of each problem it can see", () => {
    expect(formProblems("git", form({}), false)).toEqual({});
    expect(Object.keys(formProblems("git", form({ name: "x", url: "ftp://h", branch: "", syncIntervalMinutes: "1.5" }), false)).sort())
      .toEqual(["branch", "name", "syncIntervalMinutes", "url"]);
    expect(formProblems("git", form({ url: "http://u:p@host/x.git" }), false).url).toMatch(/credential/);
    expect(formProblems("git", form({ authType: "TOKEN" }), false).credential).toBe("Give the credential.");
    expect(formProblems("git", form({ authType: "TOKEN" }), true).credential).toBeUndefined();
    expect(formProblems("git", form({ authType: "BASIC", credential: "nocolon" }), true).credential).toMatch(/username:password/);
    expect(formProblems("global", form({ priority: "-1" }), false).priority).toBeDefined();
    expect(formProblems("oci", form({ syncIntervalMinutes: "10081" }), false).syncIntervalMinutes).toBeDefined();
  });

  it("fills an edit form from the API's answer without a credential", () => {
    const f = formOf({ name: "R", url: "http://h", repositories: ["a/b", "c/d"], authType: "BASIC", syncIntervalMinutes: 0, priority: 3, mandatory: true });
    expect(f).toMatchObject({ repositories: "a/b\nc/d", authType: "BASIC", credential: "", syncIntervalMinutes: "0", priority: "3", mandatory: true });
  });

  it("formats durations and intervals", () => {
    expect(formatDuration(850)).toBe("850 ms");
    expect(formatDuration(4240)).toBe("4.2 s");
    expect(formatDuration(125_000)).toBe("2 min 5 s");
    expect(intervalText(0)).toBe("manual only");
    expect(intervalText(120)).toBe("every 2 h");
    expect(intervalText(15)).toBe("every 15 min");
  });
});
