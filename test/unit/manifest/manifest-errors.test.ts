import { describe, expect, it } from "vitest";
import { parseManifest } from "../../../src/modules/applications/manifest/index.js";
import { OUR_FORMAT_YAML, manifestWithMetadata } from "./fixtures.js";

function errorMessage(yamlText: string): string {
  const result = parseManifest(yamlText, "apps/x/app.yaml");
  if (result.kind !== "error") throw new Error(`expected error, got ${JSON.stringify(result)}`);
  expect(result.path).toBe("apps/x/app.yaml");
  return result.message;
}

describe("parseManifest: errors of the manifest as a whole", () => {
  it("reports YAML that does not parse, with its position", () => {
    expect(errorMessage("metadata: [unclosed\nkind: x\n")).toMatch(/^YAML does not parse: .* at line \d+, column \d+$/);
  });

  it("reports duplicate keys", () => {
    expect(errorMessage("kind: a\nkind: b\n")).toBe("YAML does not parse: Map keys must be unique at line 2, column 1");
  });

  it("reports a file with several YAML documents", () => {
    expect(errorMessage(`${OUR_FORMAT_YAML}\n---\n${OUR_FORMAT_YAML}`)).toMatch(/^YAML does not parse: /);
  });

  it.each([
    ["an empty file", "", "manifest must be a YAML mapping (got null)"],
    ["a list", "- a\n- b\n", "manifest must be a YAML mapping (got a list)"],
    ["a scalar", "hello", 'manifest must be a YAML mapping (got "hello")'],
  ])("refuses %s", (_case, yamlText, message) => {
    expect(errorMessage(yamlText)).toBe(message);
  });

  it("refuses an unknown apiVersion", () => {
    expect(errorMessage(OUR_FORMAT_YAML.replace("fleet.app/v1alpha1", "fleet.app/v2"))).toBe(
      'apiVersion must be fleet.app/v1alpha1 or margo.org/v1-alpha1 (got "fleet.app/v2")',
    );
  });

  it("refuses a wrong kind", () => {
    expect(errorMessage(OUR_FORMAT_YAML.replace("kind: ApplicationManifest", "kind: Deployment"))).toBe(
      'kind must be ApplicationManifest for apiVersion fleet.app/v1alpha1 (got "Deployment")',
    );
  });

  it.each([
    ["uppercase letters", "Vision-Gateway"],
    ["an underscore", "vision_gateway"],
    ["an empty id", ""],
    ["201 characters", "a".repeat(201)],
  ])("refuses a metadata.id with %s", (_case, id) => {
    expect(errorMessage(manifestWithMetadata({ id }))).toMatch(/^metadata\.id must match \^\[a-z0-9-\]\{1,200\}\$ \(got "/);
  });

  it("names the bad id in the message", () => {
    expect(errorMessage(manifestWithMetadata({ id: "Vision_Gateway" }))).toBe(
      'metadata.id must match ^[a-z0-9-]{1,200}$ (got "Vision_Gateway")',
    );
  });

  it("accepts an id of 200 characters", () => {
    expect(parseManifest(manifestWithMetadata({ id: "a".repeat(200) }), "a").kind).toBe("admitted");
  });

  it("refuses a missing id, name and version in one message", () => {
    expect(errorMessage(manifestWithMetadata({ id: undefined, name: undefined, version: undefined }))).toBe(
      "metadata.id is required; metadata.name is required; metadata.version is required",
    );
  });

  it("refuses a blank name", () => {
    expect(errorMessage(manifestWithMetadata({ name: "  " }))).toBe('metadata.name must be a non-empty string (got "  ")');
  });

  it("refuses a missing metadata block", () => {
    expect(errorMessage("apiVersion: fleet.app/v1alpha1\nkind: ApplicationManifest\n")).toBe("metadata is required");
  });

  it.each([
    ["a leading v", "v2.4.1"],
    ["two parts", "2.4"],
    ["a leading =", "=2.4.1"],
    ["a leading zero", "02.4.1"],
    ["a number-looking 1.0", 1.0],
  ])("refuses a version with %s", (_case, version) => {
    expect(errorMessage(manifestWithMetadata({ version }))).toMatch(/^metadata\.version must be SemVer 2\.0 without a leading v \(got /);
  });

  it("names the leading-v version in the message", () => {
    expect(errorMessage(manifestWithMetadata({ version: "v2.4.1" }))).toBe(
      'metadata.version must be SemVer 2.0 without a leading v (got "v2.4.1")',
    );
  });
});

describe("parseManifest: hostile input", () => {
  const billionLaughs = [
    'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]',
    "b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]",
    "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]",
    "d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]",
    "e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]",
    "f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]",
    "g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]",
    "h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]",
    "i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]",
  ].join("\n");

  it("refuses an alias bomb quickly", () => {
    const started = performance.now();
    expect(errorMessage(billionLaughs)).toBe(
      "YAML refused: Excessive alias count indicates a resource exhaustion attack",
    );
    expect(performance.now() - started).toBeLessThan(1000);
  });

  it("still reads a manifest that uses a few aliases", () => {
    const yaml = OUR_FORMAT_YAML.replace("version: 2.4.1", "version: &version 2.4.1").replace(
      "revision: 2.4.1",
      "revision: *version",
    );
    const result = parseManifest(yaml, "a");
    expect(result.kind === "admitted" && result.manifest.profiles[0]?.components[0]?.properties.revision).toBe("2.4.1");
  });

  it("refuses a manifest over 1 MiB without parsing it", () => {
    const huge = `${OUR_FORMAT_YAML}\n# ${"x".repeat(1024 * 1024)}\n`;
    expect(errorMessage(huge)).toMatch(/^manifest is \d+ bytes; at most 1048576 are read$/);
  });
});
