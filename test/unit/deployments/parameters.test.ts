// Deployment parameters against the manifest's declarations: what is refused (naming the
// parameter), how values split into plain and secret ones, and what a device gets.
import { TRPCError } from "@trpc/server";
import { describe, expect, it } from "vitest";
import type { ManifestParameter } from "../../../src/modules/applications/manifest/index.js";
import { SECRET_MASK, checkParameters, openSecrets, renderParameters, sealSecrets, visibleParameters } from "../../../src/modules/deployments/parameters.js";
import { SecretBox } from "../../../src/lib/crypto.js";

const gateway = (pointer: string) => [{ pointer, components: ["gateway"] }];

const declared: Record<string, ManifestParameter> = {
  pollSeconds: { value: 30, targets: gateway("POLL_SECONDS"), schema: { type: "integer", minimum: 5, maximum: 3600 } },
  ratio: { targets: gateway("RATIO"), schema: { type: "number", minimum: 0, maximum: 1 } },
  mode: { value: "fast", targets: gateway("MODE"), schema: { type: "string", enum: ["fast", "safe"] } },
  verbose: { value: false, targets: [{ pointer: "VERBOSE", components: ["gateway", "worker"] }], schema: { type: "boolean" } },
  site: { targets: gateway("SITE"), schema: { type: "string", maxLength: 8, pattern: "^[a-z]+$" } },
  apiToken: { targets: [{ pointer: "API_TOKEN", components: ["gateway"] }, { pointer: "auth.token", components: ["worker"] }], required: true, secret: true, schema: { type: "string" } },
  note: { targets: gateway("NOTE") },
};

/** The 400 message of checkParameters (fails the test when it passes). */
function refusal(values: Record<string, unknown>, decl = declared): string {
  try {
    checkParameters(decl, values);
  } catch (err) {
    expect(err).toBeInstanceOf(TRPCError);
    expect((err as TRPCError).code).toBe("BAD_REQUEST");
    return (err as TRPCError).message;
  }
  throw new Error(`accepted ${JSON.stringify(values)}`);
}

const ok = { apiToken: "t0ken" };

describe("checkParameters", () => {
  it("accepts valid values and splits secret from plain ones", () => {
    expect(checkParameters(declared, { ...ok, pollSeconds: 60, ratio: 0.5, mode: "safe", verbose: true, site: "berlin", note: "anything" })).toEqual({
      plain: { pollSeconds: 60, ratio: 0.5, mode: "safe", verbose: true, site: "berlin", note: "anything" },
      secret: { apiToken: "t0ken" },
    });
    expect(checkParameters(declared, ok)).toEqual({ plain: {}, secret: { apiToken: "t0ken" } });
    expect(checkParameters({}, {})).toEqual({ plain: {}, secret: {} });
  });

  it("refuses unknown names, listing the known ones", () => {
    const message = refusal({ ...ok, nope: 1 });
    expect(message).toContain("parameters.nope: not a parameter of this version");
    expect(message).toContain("pollSeconds");
    expect(refusal({ x: 1 }, {})).toBe("parameters.x: not a parameter of this version (known: none)");
  });

  it("does not take inherited names for declared ones", () => {
    expect(refusal({ ...ok, toString: "x" })).toContain("parameters.toString: not a parameter");
    expect(refusal({ ...ok, constructor: "x" })).toContain("parameters.constructor: not a parameter");
  });

  it("refuses a missing required value without a default, and a null one", () => {
    expect(refusal({})).toBe("parameters.apiToken: required");
    expect(refusal({ apiToken: null })).toBe("parameters.apiToken: required");
    // required with a default: the default serves
    const withDefault: Record<string, ManifestParameter> = { level: { value: "info", required: true, targets: gateway("LEVEL") } };
    expect(checkParameters(withDefault, {})).toEqual({ plain: {}, secret: {} });
  });

  it("a required parameter whose default is null (YAML `value:` left empty) still needs a value", () => {
    const nullDefault: Record<string, ManifestParameter> = { level: { value: null, required: true, targets: gateway("LEVEL") } };
    expect(refusal({}, nullDefault)).toBe("parameters.level: required");
  });

  it.each([
    [{ pollSeconds: "60" }, "parameters.pollSeconds: must be an integer"],
    [{ pollSeconds: 7.5 }, "parameters.pollSeconds: must be an integer"],
    [{ pollSeconds: 4 }, "parameters.pollSeconds: must be at least 5"],
    [{ pollSeconds: 3601 }, "parameters.pollSeconds: must be at most 3600"],
    [{ ratio: "0.5" }, "parameters.ratio: must be a number"],
    [{ ratio: 1.5 }, "parameters.ratio: must be at most 1"],
    [{ ratio: -0.1 }, "parameters.ratio: must be at least 0"],
    [{ mode: "turbo" }, "parameters.mode: must be one of fast, safe"],
    [{ mode: 1 }, "parameters.mode: must be text"],
    [{ verbose: "true" }, "parameters.verbose: must be true or false"],
    [{ verbose: 1 }, "parameters.verbose: must be true or false"],
    [{ site: "verylongsite" }, "parameters.site: must be at most 8 characters"],
    [{ site: "Berlin" }, "parameters.site: must match ^[a-z]+$"],
    [{ site: 5 }, "parameters.site: must be text"],
    [{ apiToken: 42 }, "parameters.apiToken: must be text"],
    [{ note: { nested: true } }, "parameters.note: must be a plain value (text, number or true/false)"],
    [{ note: [1, 2] }, "parameters.note: must be a plain value (text, number or true/false)"],
  ])("refuses %j: %s", (values, problem) => {
    expect(refusal({ ...ok, ...values })).toBe(problem);
  });

  it("accepts the bounds themselves", () => {
    expect(() => checkParameters(declared, { ...ok, pollSeconds: 5 })).not.toThrow();
    expect(() => checkParameters(declared, { ...ok, pollSeconds: 3600 })).not.toThrow();
    expect(() => checkParameters(declared, { ...ok, site: "abcdefgh" })).not.toThrow();
  });

  it("accepts null for an optional parameter", () => {
    expect(checkParameters(declared, { ...ok, site: null }).plain).toEqual({ site: null });
  });

  it("reports every problem at once", () => {
    const message = refusal({ pollSeconds: 1, mode: "turbo", nope: true });
    expect(message.split("; ").sort()).toEqual([
      "parameters.apiToken: required",
      "parameters.mode: must be one of fast, safe",
      "parameters.nope: not a parameter of this version (known: pollSeconds, ratio, mode, verbose, site, apiToken, note)",
      "parameters.pollSeconds: must be at least 5",
    ]);
  });

  it("checks an enum without a type, and a pattern as Unicode", () => {
    const decl: Record<string, ManifestParameter> = {
      level: { targets: gateway("L"), schema: { enum: [1, 2, "three"] } },
      word: { targets: gateway("W"), schema: { pattern: "^\\p{L}+$" } },
    };
    expect(() => checkParameters(decl, { level: 2, word: "Grüße" })).not.toThrow();
    expect(refusal({ level: "2" }, decl)).toBe("parameters.level: must be one of 1, 2, three");
    expect(refusal({ word: "a b" }, decl)).toBe("parameters.word: must match ^\\p{L}+$");
  });
});

describe("secret values", () => {
  const box = new SecretBox(Buffer.alloc(32, 7));

  it("are sealed (nothing to seal: null), opened again, and masked for the API", () => {
    const { plain, secret } = checkParameters(declared, { ...ok, mode: "safe" });
    const sealed = sealSecrets(box, secret);
    expect(sealed).not.toBeNull();
    expect(sealed).not.toContain("t0ken");
    expect(openSecrets(box, sealed)).toEqual({ apiToken: "t0ken" });
    expect(sealSecrets(box, {})).toBeNull();
    expect(openSecrets(box, null)).toEqual({});
    expect(visibleParameters(plain, Object.keys(secret))).toEqual({ mode: "safe", apiToken: SECRET_MASK });
  });
});

describe("renderParameters", () => {
  it("places each value at its targets, per component of the deployed profile", () => {
    expect(renderParameters(declared, { pollSeconds: 60, apiToken: "t0ken", site: "berlin" }, ["gateway", "worker"])).toEqual({
      gateway: { POLL_SECONDS: 60, MODE: "fast", VERBOSE: false, SITE: "berlin", API_TOKEN: "t0ken" },
      worker: { VERBOSE: false, "auth.token": "t0ken" },
    });
  });

  it("uses the defaults for values not given and leaves out parameters without any value", () => {
    expect(renderParameters(declared, {}, ["gateway"])).toEqual({ gateway: { POLL_SECONDS: 30, MODE: "fast", VERBOSE: false } });
  });

  it("includes secret values (the device needs them)", () => {
    expect(renderParameters(declared, { apiToken: "s3cret" }, ["gateway"]).gateway.API_TOKEN).toBe("s3cret");
  });

  it("skips targets of components the profile does not have, and gives every component an entry", () => {
    expect(renderParameters(declared, { apiToken: "x" }, ["worker"])).toEqual({ worker: { VERBOSE: false, "auth.token": "x" } });
    expect(renderParameters(declared, { apiToken: "x" }, ["sidecar"])).toEqual({ sidecar: {} });
    expect(renderParameters(declared, { apiToken: "x" }, [])).toEqual({});
  });

  it("keeps falsy values that are values (0, false, empty text)", () => {
    const decl: Record<string, ManifestParameter> = {
      zero: { value: 5, targets: gateway("ZERO") },
      off: { value: true, targets: gateway("OFF") },
      empty: { value: "x", targets: gateway("EMPTY") },
    };
    expect(renderParameters(decl, { zero: 0, off: false, empty: "" }, ["gateway"])).toEqual({ gateway: { ZERO: 0, OFF: false, EMPTY: "" } });
  });
});

describe("rendering a null value", () => {
  it("renders the default when a deployment gives null for a parameter that has one", () => {
    const declared: Record<string, ManifestParameter> = { poll: { value: 30, targets: [{ pointer: "POLL", components: ["app"] }] } };
    expect(renderParameters(declared, { poll: null }, ["app"])).toEqual({ app: { POLL: 30 } });
    expect(renderParameters(declared, { poll: 5 }, ["app"])).toEqual({ app: { POLL: 5 } });
  });
});
