// The parameter form against the service: fields generated from the declarations, and the
// browser's verdict on what was typed equal to the API's (checkParameters, which answers the
// 400 of POST /deployments) for random inputs.
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { checkParameters } from "../../../src/modules/deployments/parameters";
import type { ManifestParameter } from "../../../src/modules/applications/manifest/types";
import { parameterErrors, parameterFields, parameterSubmission, parameterValues, type ParameterInputs } from "./parameter-form";

const target = [{ pointer: "X", components: ["app"] }];
const DECLARED: Record<string, ManifestParameter> = {
  mode: { value: "fast", targets: target, schema: { type: "string", enum: ["fast", "safe"] } },
  pollSeconds: { value: 30, targets: target, schema: { type: "integer", minimum: 5, maximum: 3600 } },
  ratio: { targets: target, schema: { type: "number", minimum: 0, maximum: 1 } },
  siteCode: { targets: target, required: true, schema: { type: "string", pattern: "^[A-Z]{3}-[0-9]{2}$" } },
  apiToken: { targets: target, required: true, secret: true, schema: { type: "string", maxLength: 20 } },
  verbose: { value: false, targets: target, schema: { type: "boolean" } },
};

/** The API's verdict: null (accepted) or its 400 message. */
function apiVerdict(values: Record<string, unknown>): string | null {
  try {
    checkParameters(DECLARED, values);
    return null;
  } catch (err) {
    return (err as Error).message;
  }
}

describe("parameter form", () => {
  it("generates one field per declaration: enums and booleans as choices, secrets as passwords, numbers with their range", () => {
    const fields = Object.fromEntries(parameterFields(DECLARED).map((f) => [f.name, f]));
    expect(fields.mode).toMatchObject({ kind: "select", options: ["fast", "safe"], placeholder: "fast", required: false });
    expect(fields.pollSeconds).toMatchObject({ kind: "integer", min: 5, max: 3600, placeholder: "30" });
    expect(fields.ratio).toMatchObject({ kind: "number", min: 0, max: 1 });
    expect(fields.siteCode).toMatchObject({ kind: "text", required: true, pattern: "^[A-Z]{3}-[0-9]{2}$" });
    expect(fields.apiToken).toMatchObject({ kind: "password", required: true, secret: true, maxLength: 20 });
    expect(fields.verbose).toMatchObject({ kind: "select", options: ["true", "false"] });
  });

  it("refuses exactly what the API refuses, with the API's words for each field", () => {
    const text = fc.oneof(fc.constant(""), fc.string({ maxLength: 25 }), fc.constantFrom("fast", "safe", "slow", "4", "5", "3600", "3601", "0.5", "1.5", "x", "BER-01", "ber-01", "true", "false"));
    const inputs = fc.record({ mode: text, pollSeconds: text, ratio: text, siteCode: text, apiToken: text, verbose: text }, { requiredKeys: [] }) as fc.Arbitrary<ParameterInputs>;
    fc.assert(
      fc.property(inputs, (typed) => {
        const errors = parameterErrors(DECLARED, typed);
        const verdict = apiVerdict(parameterValues(DECLARED, typed));
        const expected = Object.entries(errors).map(([name, problem]) => `parameters.${name}: ${problem}`);
        if (verdict === null) expect(expected).toEqual([]);
        else expect(verdict.split("; ").sort()).toEqual(expected.sort());
      }),
      { numRuns: 3_000 },
    );
  });

  it("turns typed text into the API's types", () => {
    expect(parameterValues(DECLARED, { mode: "safe", pollSeconds: "60", ratio: "0.25", siteCode: "BER-01", apiToken: "t0ken", verbose: "true" }))
      .toEqual({ mode: "safe", pollSeconds: 60, ratio: 0.25, siteCode: "BER-01", apiToken: "t0ken", verbose: true });
    expect(parameterErrors(DECLARED, { pollSeconds: "4", siteCode: "berlin", mode: "slow", apiToken: "" })).toEqual({
      pollSeconds: "must be at least 5",
      siteCode: "must match ^[A-Z]{3}-[0-9]{2}$",
      mode: "must be one of fast, safe",
      apiToken: "required",
    });
  });

  it("on an edit, keeps the stored secret when nothing changed, and asks for it again when the parameters are replaced", () => {
    const stored = { values: { mode: "safe", siteCode: "BER-01", apiToken: "********" }, secretNames: ["apiToken"] };
    expect(parameterSubmission(DECLARED, { mode: "safe", siteCode: "BER-01" }, stored)).toEqual({ send: undefined, errors: {} });
    expect(parameterSubmission(DECLARED, { mode: "fast", siteCode: "BER-01" }, stored).errors).toEqual({ apiToken: "type the secret again: changed parameters replace the stored ones" });
    expect(parameterSubmission(DECLARED, { mode: "fast", siteCode: "BER-01", apiToken: "new" }, stored)).toEqual({ send: { mode: "fast", siteCode: "BER-01", apiToken: "new" }, errors: {} });
  });
});
