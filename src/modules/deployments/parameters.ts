// Deployment parameters: checked against the parameter declarations of the version's
// manifest, split into plain and secret values for storage, and rendered for the device.
import type { SecretBox } from "../../lib/crypto.js";
import type { ManifestParameter } from "../applications/manifest/index.js";
import { parameterProblems } from "../applications/manifest/parameter-rules.js";
import { badRequest } from "../../trpc/errors.js";

export type ParameterValues = Record<string, unknown>;

/** Placeholder returned instead of a secret value. */
export const SECRET_MASK = "********";

/**
 * Refuses unknown names, missing required values and values that break a declaration's
 * schema, naming the parameter. Returns the values split into plain and secret ones.
 */
export function checkParameters(declared: Record<string, ManifestParameter>, given: ParameterValues) {
  // The same rules as the console's parameter form (it imports parameter-rules.ts).
  const problems = parameterProblems(declared, given).map((p) => `parameters.${p.name}: ${p.problem}`);
  if (problems.length) throw badRequest(problems.join("; "));

  const plain: ParameterValues = {};
  const secret: ParameterValues = {};
  for (const [name, value] of Object.entries(given)) (declared[name].secret ? secret : plain)[name] = value;
  return { plain, secret };
}

/**
 * The required secret parameters (no default) that have no value among `secretNames`: a
 * deployment declared as code is created without them (its documents never hold a secret) and
 * cannot start until they are set (POST /deployments/{id}/secret-parameters).
 */
export function missingSecrets(declared: Record<string, ManifestParameter>, secretNames: readonly string[]): string[] {
  return Object.entries(declared)
    .filter(([name, p]) => p.secret && p.required && (p.value === undefined || p.value === null) && !secretNames.includes(name))
    .map(([name]) => name);
}

/** The declarations with the required secrets that `given` lacks made optional: the rest is checked as ever. */
export function withoutMissingSecrets(declared: Record<string, ManifestParameter>, given: ParameterValues): Record<string, ManifestParameter> {
  const missing = new Set(missingSecrets(declared, Object.keys(given)));
  return Object.fromEntries(Object.entries(declared).map(([name, p]) => [name, missing.has(name) ? { ...p, required: false } : p]));
}

export function sealSecrets(secrets: SecretBox, values: ParameterValues): string | null {
  return Object.keys(values).length ? secrets.encrypt(JSON.stringify(values)) : null;
}

export function openSecrets(secrets: SecretBox, sealed: string | null): ParameterValues {
  return sealed ? (JSON.parse(secrets.decrypt(sealed)) as ParameterValues) : {};
}

/** What the API shows: plain values as given, secret ones masked. */
export function visibleParameters(plain: ParameterValues, secretNames: string[]): ParameterValues {
  return { ...plain, ...Object.fromEntries(secretNames.map((name) => [name, SECRET_MASK])) };
}

/**
 * What the device gets: every declared parameter with its value (given, else the default),
 * placed at its targets: `{ <component>: { <pointer>: value } }`, for the components of the
 * deployed profile. Parameters without a value are left out.
 */
export function renderParameters(declared: Record<string, ManifestParameter>, values: ParameterValues, components: string[]): Record<string, Record<string, unknown>> {
  const rendered: Record<string, Record<string, unknown>> = Object.fromEntries(components.map((c) => [c, {}]));
  for (const [name, declaration] of Object.entries(declared)) {
    // null or absent: the default
    const value = (Object.hasOwn(values, name) ? values[name] : undefined) ?? declaration.value;
    if (value === undefined || value === null) continue;
    for (const target of declaration.targets) {
      for (const component of target.components) {
        if (Object.hasOwn(rendered, component)) rendered[component][target.pointer] = value;
      }
    }
  }
  return rendered;
}
