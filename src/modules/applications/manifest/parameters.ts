/**
 * The manifest's `parameters`. Their shape is read once; whether each target's components
 * exist is a rule of every profile (see admission.ts), because profiles differ in components.
 */
import { describeValue, isRecord, nonEmptyString } from "./describe-value.js";
import type { ManifestParameter, ParameterTarget } from "./types.js";

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
    parameters.push([name, "value" in declaration ? { value: declaration.value, targets } : { targets }]);
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
