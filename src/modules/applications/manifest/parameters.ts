/**
 * The manifest's `parameters`. Their shape is read once; whether each target's components
 * exist is a rule of every profile (see admission.ts), because profiles differ in components.
 */
import { describeValue, isRecord, nonEmptyString } from "./describe-value.js";
import type { ManifestParameter, ParameterSchema, ParameterTarget, ParameterType } from "./types.js";
import { parameterValueProblem } from "./parameter-rules.js";

export { parameterValueProblem };

export type ParametersResult =
  | { ok: true; parameters: Record<string, ManifestParameter> }
  | { ok: false; rule: string };

export function readParameters(raw: unknown): ParametersResult {
  if (raw === undefined || raw === null) return { ok: true, parameters: {} };
  if (!isRecord(raw)) return { ok: false, rule: `parameters must be a mapping (got ${describeValue(raw)})` };

  const parameters: Array<[string, ManifestParameter]> = [];
  for (const [name, declaration] of Object.entries(raw)) {
    if (!isRecord(declaration)) return { ok: false, rule: `parameter "${name}" must be a mapping` };
    const targets = readTargets(name, declaration.targets);
    if (typeof targets === "string") return { ok: false, rule: targets };
    const extras = readDeclarationExtras(name, declaration);
    if (typeof extras === "string") return { ok: false, rule: extras };
    parameters.push([name, { ...("value" in declaration ? { value: declaration.value } : {}), targets, ...extras }]);
  }
  // fromEntries defines own properties, so a parameter named "__proto__" stays a plain key.
  return { ok: true, parameters: Object.fromEntries(parameters) };
}

/** Returns the targets, or the broken rule as text. */
function readTargets(parameterName: string, raw: unknown): ParameterTarget[] | string {
  const shape = `parameter "${parameterName}": targets must be a list of { pointer, components }`;
  if (!Array.isArray(raw)) return shape;
  const targets: ParameterTarget[] = [];
  for (const target of raw) {
    if (!isRecord(target)) return shape;
    const pointer = nonEmptyString(target.pointer);
    if (pointer === undefined) return `parameter "${parameterName}": every target needs a pointer`;
    const { components } = target;
    if (!Array.isArray(components) || components.length === 0 || !components.every((c) => typeof c === "string")) {
      return `parameter "${parameterName}": target "${pointer}" must list its components by name`;
    }
    targets.push({ pointer, components: [...components] });
  }
  return targets;
}

const PARAMETER_TYPES: readonly ParameterType[] = ["string", "integer", "number", "boolean"];

/**
 * The optional schema of a parameter: `description`, `required`, `secret` and `schema` ({ type,
 * enum, minimum, maximum, maxLength, pattern }). Without a declared type the default value's
 * type is used, so a manifest that only gives defaults still gets its values checked.
 */
function readDeclarationExtras(name: string, declaration: Record<string, unknown>): Omit<ManifestParameter, "value" | "targets"> | string {
  const extras: Omit<ManifestParameter, "value" | "targets"> = {};
  const prefix = `parameter "${name}"`;
  if (declaration.description !== undefined) {
    if (typeof declaration.description !== "string") return `${prefix}: description must be text`;
    extras.description = declaration.description;
  }
  for (const flag of ["required", "secret"] as const) {
    if (declaration[flag] === undefined) continue;
    if (typeof declaration[flag] !== "boolean") return `${prefix}: ${flag} must be true or false`;
    extras[flag] = declaration[flag];
  }
  const raw = declaration.schema;
  if (raw !== undefined && !isRecord(raw)) return `${prefix}: schema must be a mapping`;
  const schema: ParameterSchema = {};
  const declaredType = raw?.type;
  if (declaredType !== undefined) {
    if (!PARAMETER_TYPES.includes(declaredType as ParameterType)) return `${prefix}: schema.type must be one of ${PARAMETER_TYPES.join(", ")}`;
    schema.type = declaredType as ParameterType;
  } else if ("value" in declaration && declaration.value !== null) {
    const inferred = typeOfValue(declaration.value);
    if (inferred) schema.type = inferred;
  }
  for (const bound of ["minimum", "maximum", "maxLength"] as const) {
    if (raw?.[bound] === undefined) continue;
    if (typeof raw[bound] !== "number" || !Number.isFinite(raw[bound])) return `${prefix}: schema.${bound} must be a number`;
    schema[bound] = raw[bound];
  }
  if (raw?.pattern !== undefined) {
    if (typeof raw.pattern !== "string" || !isValidPattern(raw.pattern)) return `${prefix}: schema.pattern must be a regular expression`;
    schema.pattern = raw.pattern;
  }
  if (raw?.enum !== undefined) {
    if (!Array.isArray(raw.enum) || raw.enum.length === 0 || !raw.enum.every((v) => ["string", "number", "boolean"].includes(typeof v))) {
      return `${prefix}: schema.enum must be a non-empty list of plain values`;
    }
    schema.enum = raw.enum as Array<string | number | boolean>;
  }
  if (Object.keys(schema).length) extras.schema = schema;
  // A declared schema must admit its own default (opaque structured defaults carry no schema).
  if (extras.schema && "value" in declaration && declaration.value !== null && typeof declaration.value !== "object") {
    const problem = parameterValueProblem({ ...extras, required: false }, declaration.value);
    if (problem) return `${prefix}: the default value ${problem}`;
  }
  return extras;
}

function typeOfValue(value: unknown): ParameterType | undefined {
  if (typeof value === "boolean") return "boolean";
  if (typeof value === "string") return "string";
  if (typeof value === "number") return Number.isInteger(value) ? "integer" : "number";
  return undefined;
}

function isValidPattern(pattern: string): boolean {
  if (pattern.length > 500) return false;
  try {
    new RegExp(pattern, "u");
    return true;
  } catch {
    return false;
  }
}
