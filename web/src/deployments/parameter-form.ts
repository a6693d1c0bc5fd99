// The parameter form generated from a version's declarations, and what a person typed turned
// into the values the API takes. Checked by the API's own rules (parameter-rules.ts, imported
// from the service: the bundle test checks nothing else of the server comes along), so the
// form refuses exactly what POST /deployments would refuse, named next to each field.
import { parameterProblems, type ParameterRules } from "../../../src/modules/applications/manifest/parameter-rules";

export interface ParameterDeclaration extends ParameterRules {
  description?: string;
}

export type FieldKind = "text" | "password" | "number" | "integer" | "select";

export interface ParameterField {
  name: string;
  kind: FieldKind;
  required: boolean;
  secret: boolean;
  description?: string;
  /** the choices of an enum, as text */
  options?: string[];
  /** the default value as text ("" when none) */
  placeholder: string;
  min?: number;
  max?: number;
  maxLength?: number;
  pattern?: string;
}

/** What the person typed (or chose) per field; absent or "" means "not given" (the default applies). */
export type ParameterInputs = Record<string, string>;

/** A value as the API takes it. */
export type ParameterValue = string | number | boolean;

function kindOf(d: ParameterDeclaration): FieldKind {
  if (d.secret) return "password";
  // true/false is a choice too: a select can also say "not given", which a checkbox cannot.
  if (d.schema?.enum || d.schema?.type === "boolean") return "select";
  switch (d.schema?.type) {
    case "integer":
      return "integer";
    case "number":
      return "number";
    default:
      return "text";
  }
}

/** One field per declaration, in the manifest's order. */
export function parameterFields(declared: Record<string, ParameterDeclaration>): ParameterField[] {
  return Object.entries(declared).map(([name, d]) => ({
    name,
    kind: kindOf(d),
    required: !!d.required && (d.value === undefined || d.value === null),
    secret: !!d.secret,
    description: d.description,
    options: d.schema?.enum?.map(String) ?? (d.schema?.type === "boolean" ? ["true", "false"] : undefined),
    placeholder: d.value === undefined || d.value === null || d.secret ? "" : String(d.value),
    min: d.schema?.minimum,
    max: d.schema?.maximum,
    maxLength: d.schema?.maxLength,
    pattern: d.schema?.pattern,
  }));
}

/**
 * The value the API gets for one field's text: a number for a number field (the text itself
 * when it is no number, so that the rules name it), true/false for a boolean, the enum's own
 * value (number or boolean) for a select; undefined when nothing was given (the default applies).
 */
export function fieldValue(declaration: ParameterDeclaration, input: string | undefined): ParameterValue | undefined {
  if (input === undefined || input === "") return undefined;
  const type = declaration.schema?.type;
  const choice = declaration.schema?.enum?.find((v) => String(v) === input);
  if (choice !== undefined) return choice;
  if (type === "integer" || type === "number") {
    const n = Number(input.trim());
    return input.trim() !== "" && Number.isFinite(n) ? n : input;
  }
  if (type === "boolean") return input === "true" ? true : input === "false" ? false : input;
  return input;
}

/** The values to send: only the fields given. */
export function parameterValues(declared: Record<string, ParameterDeclaration>, inputs: ParameterInputs): Record<string, ParameterValue> {
  const values: Record<string, ParameterValue> = {};
  for (const [name, d] of Object.entries(declared)) {
    const value = fieldValue(d, inputs[name]);
    if (value !== undefined) values[name] = value;
  }
  return values;
}

/** Each field's problem by the API's rules (none: the API accepts the values). */
export function parameterErrors(declared: Record<string, ParameterDeclaration>, inputs: ParameterInputs): Record<string, string> {
  return Object.fromEntries(parameterProblems(declared, parameterValues(declared, inputs)).map((p) => [p.name, p.problem]));
}

/**
 * A field's text from a stored deployment's value; secrets come back masked by the API and
 * start empty (left empty on an edit, the stored secret is kept).
 */
export function inputsFromValues(declared: Record<string, ParameterDeclaration>, values: Record<string, unknown>, secretNames: string[]): ParameterInputs {
  const inputs: ParameterInputs = {};
  for (const name of Object.keys(declared)) {
    if (!Object.hasOwn(values, name) || secretNames.includes(name)) continue;
    const value = values[name];
    if (value === null || value === undefined) continue;
    inputs[name] = String(value);
  }
  return inputs;
}

/** A stored deployment being edited: its values as the API shows them (secrets masked). */
export interface StoredParameters {
  values: Record<string, unknown>;
  secretNames: string[];
}

/**
 * What the form sends as `parameters`, and each field's problem. Creating: the values given.
 * Editing: nothing when nothing changed (the API keeps every value, secrets included); else
 * the whole set, because a PATCH replaces it, so a stored secret must then be typed again.
 */
export function parameterSubmission(declared: Record<string, ParameterDeclaration>, inputs: ParameterInputs, stored?: StoredParameters): {
  send: Record<string, ParameterValue> | undefined;
  errors: Record<string, string>;
} {
  const values = parameterValues(declared, inputs);
  if (!stored) return { send: values, errors: parameterErrors(declared, inputs) };
  const before = parameterValues(declared, inputsFromValues(declared, stored.values, stored.secretNames));
  const kept = stored.secretNames.filter((name) => !Object.hasOwn(values, name));
  const unchanged = JSON.stringify(values) === JSON.stringify(before);
  if (unchanged) {
    const errors = parameterErrors(declared, inputs);
    for (const name of kept) delete errors[name];
    return { send: undefined, errors };
  }
  const errors = parameterErrors(declared, inputs);
  for (const name of kept) errors[name] = "type the secret again: changed parameters replace the stored ones";
  return { send: values, errors };
}
