import { describe, expect, it } from "vitest";
import { parameterConstraints, parameterDefault, parameterType, profileArchitectures, profileResources, shortRevision, type Parameter, type Profile } from "./catalog";

const param = (p: Partial<Parameter>): Parameter => ({ targets: [], ...p });
const profile = (requiredResources?: Profile["requiredResources"]): Profile => ({ id: "p", type: "compose", components: [], ...(requiredResources ? { requiredResources } : {}) });

describe("parameters in words", () => {
  it("reads the declared type, else the default's, else any", () => {
    expect(parameterType(param({ schema: { type: "integer" }, value: "x" }))).toBe("integer");
    expect(parameterType(param({ value: true }))).toBe("boolean");
    expect(parameterType(param({ value: { a: 1 } }))).toBe("object");
    expect(parameterType(param({ value: [1] }))).toBe("list");
    expect(parameterType(param({}))).toBe("any");
  });

  it("never shows a secret's default; says when a value is required", () => {
    expect(parameterDefault(param({ value: "tok-123", secret: true }))).toBe("set (hidden)");
    expect(parameterDefault(param({ required: true }))).toBe("none (required)");
    expect(parameterDefault(param({}))).toBe("none");
    expect(parameterDefault(param({ value: "info" }))).toBe("info");
    expect(parameterDefault(param({ value: 30 }))).toBe("30");
    expect(parameterDefault(param({ value: { a: [1] } }))).toBe('{"a":[1]}');
  });

  it("lists every constraint in a fixed order", () => {
    expect(parameterConstraints(param({ required: true, schema: { type: "string", enum: ["a", "b"], maxLength: 10, pattern: "^tok-" } })))
      .toEqual(["required", "one of a, b", "at most 10 characters", "matches ^tok-"]);
    expect(parameterConstraints(param({ schema: { minimum: 5, maximum: 3600 } }))).toEqual(["5 to 3600"]);
    expect(parameterConstraints(param({ schema: { minimum: 0 } }))).toEqual(["at least 0"]);
    expect(parameterConstraints(param({ schema: { maximum: 9 } }))).toEqual(["at most 9"]);
    expect(parameterConstraints(param({ schema: { enum: [1, true] } }))).toEqual(["one of 1, true"]);
    expect(parameterConstraints(param({}))).toEqual([]);
  });
});

describe("profiles in words", () => {
  it("names the architectures, any when none is declared", () => {
    expect(profileArchitectures(profile({ cpu: { cores: 2, architectures: ["amd64", "arm64"] } }))).toBe("amd64, arm64");
    expect(profileArchitectures(profile({ cpu: { cores: 2 } }))).toBe("any");
    expect(profileArchitectures(profile())).toBe("any");
  });

  it("names the required resources", () => {
    expect(profileResources(profile({ cpu: { cores: 1 }, memory: "512Mi", storage: "1Gi" }))).toBe("1 core, 512Mi memory, 1Gi storage");
    expect(profileResources(profile({ cpu: { cores: 4 } }))).toBe("4 cores");
    expect(profileResources(profile())).toBe("none declared");
  });
});

describe("revisions", () => {
  it("shortens commits and digests, keeps anything else", () => {
    expect(shortRevision("0123456789abcdef0123456789abcdef01234567")).toBe("0123456789ab");
    expect(shortRevision(`sha256:${"a".repeat(64)}`)).toBe(`sha256:${"a".repeat(12)}`);
    expect(shortRevision("v1.2")).toBe("v1.2");
    expect(shortRevision(undefined)).toBe("");
  });
});
