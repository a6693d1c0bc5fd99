// The optional parts of a manifest's parameter declarations: description, required, secret
// and schema { type, enum, minimum, maximum, maxLength, pattern }, read when the manifest is
// admitted; a broken declaration rejects the manifest, naming the parameter.
import { describe, expect, it } from "vitest";
import { parseManifest, type ManifestParameter } from "../../../src/modules/applications/manifest/index.js";
import { readParameters } from "../../../src/modules/applications/manifest/parameters.js";
import { manifestWith, profile } from "./fixtures.js";

const targets = [{ pointer: "LEVEL", components: ["app"] }];

/** The admitted declaration of parameter "level" with the given extra fields. */
function declaration(fields: Record<string, unknown>): ManifestParameter {
  const result = parseManifest(manifestWith([profile("p")], { parameters: { level: { targets, ...fields } } }), "app.yaml");
  if (result.kind !== "admitted") throw new Error(`expected admitted, got ${JSON.stringify(result)}`);
  return result.manifest.parameters.level;
}

/** The rejection reason of a manifest whose parameter "level" has the given extra fields. */
function rejection(fields: Record<string, unknown>): string {
  const result = parseManifest(manifestWith([profile("p")], { parameters: { level: { targets, ...fields } } }), "app.yaml");
  if (result.kind !== "rejected") throw new Error(`expected rejected, got ${JSON.stringify(result)}`);
  return result.reason;
}

describe("parameter declarations: what is kept", () => {
  it("keeps description, required, secret and every schema field", () => {
    const schema = { type: "string", enum: ["debug", "info"], maxLength: 10, pattern: "^[a-z]+$" };
    expect(declaration({ description: "Log level", required: true, secret: false, schema })).toEqual({
      targets, description: "Log level", required: true, secret: false, schema,
    });
    expect(declaration({ schema: { type: "integer", minimum: 1, maximum: 10 } })).toEqual({ targets, schema: { type: "integer", minimum: 1, maximum: 10 } });
  });

  it("a declaration with only targets has no schema", () => {
    expect(declaration({})).toEqual({ targets });
    expect(declaration({ value: null })).toEqual({ targets, value: null });
  });

  it.each([
    [30, "integer"],
    [0.5, "number"],
    ["debug", "string"],
    [false, "boolean"],
  ])("infers the type from the default %j: %s", (value, type) => {
    expect(declaration({ value })).toEqual({ targets, value, schema: { type } });
  });

  it("a declared type wins over the default's, and bounds join the inferred type", () => {
    expect(declaration({ value: 30, schema: { type: "number" } }).schema).toEqual({ type: "number" });
    expect(declaration({ value: 30, schema: { minimum: 5 } }).schema).toEqual({ type: "integer", minimum: 5 });
  });

  it("reads numeric-looking description and pattern as the text written, bounds and enum members as numbers", () => {
    expect(declaration({ description: 5, schema: { pattern: 123, minimum: 1, enum: [1, 2] } })).toEqual({
      targets, description: "5", schema: { pattern: "123", minimum: 1, enum: [1, 2] },
    });
  });

  it("infers nothing from a default that is not a plain value", () => {
    expect(declaration({ value: [1, 2] })).toEqual({ targets, value: [1, 2] });
    expect(declaration({ value: { a: 1 } })).toEqual({ targets, value: { a: 1 } });
  });

  it("reads the YAML form the fixtures of the deployment tests use", () => {
    const yaml = `apiVersion: fleet.app/v1alpha1
kind: ApplicationManifest
metadata: { id: demo-app, name: Demo, version: 1.0.0 }
deploymentProfiles:
  - id: p
    type: compose
    components: [{ name: app, properties: { repository: oci://r/app, revision: "1" } }]
parameters:
  apiToken:
    secret: true
    required: true
    schema: { type: string, maxLength: 100 }
    targets: [{ pointer: API_TOKEN, components: [app] }]
`;
    const result = parseManifest(yaml, "app.yaml");
    expect(result.kind).toBe("admitted");
    if (result.kind === "admitted") {
      expect(result.manifest.parameters.apiToken).toEqual({
        targets: [{ pointer: "API_TOKEN", components: ["app"] }], secret: true, required: true, schema: { type: "string", maxLength: 100 },
      });
    }
  });
});

describe("parameter declarations: what rejects the manifest", () => {
  it.each([
    ["an unknown schema.type", { schema: { type: "text" } }, "schema.type must be one of string, integer, number, boolean"],
    ["a list as schema.type", { schema: { type: ["string"] } }, "schema.type must be one of string, integer, number, boolean"],
    ["a pattern that is no regular expression", { schema: { pattern: "([a-z" } }, "schema.pattern must be a regular expression"],
    ["a pattern invalid only in Unicode mode", { schema: { pattern: "\\-\\q" } }, "schema.pattern must be a regular expression"],
    ["a pattern longer than 500 characters", { schema: { pattern: "a".repeat(501) } }, "schema.pattern must be a regular expression"],
    ["a pattern that is not text", { schema: { pattern: ["a"] } }, "schema.pattern must be a regular expression"],
    ["a text minimum", { schema: { minimum: "5" } }, "schema.minimum must be a number"],
    ["a text maximum", { schema: { maximum: "ten" } }, "schema.maximum must be a number"],
    ["a text maxLength", { schema: { maxLength: "10" } }, "schema.maxLength must be a number"],
    ["an empty enum", { schema: { enum: [] } }, "schema.enum must be a non-empty list of plain values"],
    ["an enum of mappings", { schema: { enum: [{ a: 1 }] } }, "schema.enum must be a non-empty list of plain values"],
    ["an enum that is not a list", { schema: { enum: "a,b" } }, "schema.enum must be a non-empty list of plain values"],
    ["a schema that is not a mapping", { schema: "string" }, "schema must be a mapping"],
    ["a description that is a list", { description: ["a"] }, "description must be text"],
    ["a description that is a mapping", { description: { en: "a" } }, "description must be text"],
    ["required as text", { required: "yes" }, "required must be true or false"],
    ["secret as a number", { secret: 1 }, "secret must be true or false"],
  ])("rejects %s, naming the parameter", (_case, fields, rule) => {
    expect(rejection(fields)).toBe(`profile "p": parameter "level": ${rule}`);
  });

  it("readParameters answers the same rule directly", () => {
    expect(readParameters({ level: { targets, schema: { type: "text" } } })).toEqual({
      ok: false, rule: 'parameter "level": schema.type must be one of string, integer, number, boolean',
    });
    expect(readParameters(undefined)).toEqual({ ok: true, parameters: {} });
  });

  it("keeps a parameter named __proto__ as a plain key", () => {
    const result = readParameters(JSON.parse('{"__proto__": {"targets": [{"pointer": "P", "components": ["app"]}], "value": 1}}'));
    expect(result.ok).toBe(true);
    if (result.ok) {
      expect(Object.keys(result.parameters)).toEqual(["__proto__"]);
      expect(Object.getPrototypeOf(result.parameters)).toBe(Object.prototype);
    }
  });
});

describe("a declared schema checks the default value", () => {
  const withParameter = (declaration: string) => `apiVersion: fleet.app/v1alpha1
kind: ApplicationManifest
metadata: { id: defaults, name: Defaults, version: 1.0.0 }
deploymentProfiles:
  - id: main
    type: compose
    components: [{ name: app, properties: { repository: "oci://r.example/app", revision: "1" } }]
parameters:
  level:
${declaration}
    targets: [{ pointer: LEVEL, components: [app] }]
`;

  it("rejects a default that breaks its own schema, naming the parameter", () => {
    const result = parseManifest(withParameter(`    value: abc\n    schema: { type: integer }`), "app.yaml");
    expect(result.kind).toBe("rejected");
    expect((result as { reason: string }).reason).toContain('parameter "level": the default value must be an integer');
    const outOfRange = parseManifest(withParameter(`    value: 50\n    schema: { minimum: 1, maximum: 10 }`), "app.yaml");
    expect((outOfRange as { reason: string }).reason).toContain("the default value must be at most 10");
  });

  it("admits a default that fits, and structured defaults without a schema", () => {
    expect(parseManifest(withParameter(`    value: 5\n    schema: { minimum: 1, maximum: 10 }`), "app.yaml").kind).toBe("admitted");
    expect(parseManifest(withParameter(`    value: { a: 1 }`), "app.yaml").kind).toBe("admitted");
  });
});
