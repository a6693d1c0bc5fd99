// The rules a deployment's parameter values must follow, given the manifest's declarations:
// pure and free of imports, so that the web console checks what a person types by exactly the
// rules the API applies (web/src/deployments/parameter-form.ts imports this file; the bundle
// test checks that nothing else of the server comes along). The API turns the problems into
// its 400 (src/modules/deployments/parameters.ts); admission checks defaults with the same
// `parameterValueProblem`.

export type ParameterType = "string" | "integer" | "number" | "boolean";

/** What a deployment may give for a parameter; every field optional (docs/deployments.md). */
export interface ParameterSchema {
  /** declared, or the type of the default value */
  type?: ParameterType;
  enum?: Array<string | number | boolean>;
  minimum?: number;
  maximum?: number;
  maxLength?: number;
  pattern?: string;
}

/** The part of a parameter declaration its values are checked against. */
export interface ParameterRules {
  /** the default value */
  value?: unknown;
  /** a deployment must give a value (no default) */
  required?: boolean;
  secret?: boolean;
  schema?: ParameterSchema;
}

/** Why `value` does not fit the declaration (null when it does); shared by admission (defaults) and deployments (values). */
export function parameterValueProblem(declaration: ParameterRules, value: unknown): string | null {
  const schema = declaration.schema;
  if (value === null || value === undefined) return declaration.required ? "required" : null;
  if (typeof value === "object") return "must be a plain value (text, number or true/false)";
  if (!schema) return null;
  switch (schema.type) {
    case "string":
      if (typeof value !== "string") return "must be text";
      break;
    case "integer":
      if (typeof value !== "number" || !Number.isInteger(value)) return "must be an integer";
      break;
    case "number":
      if (typeof value !== "number" || !Number.isFinite(value)) return "must be a number";
      break;
    case "boolean":
      if (typeof value !== "boolean") return "must be true or false";
      break;
  }
  if (schema.enum && !schema.enum.includes(value as string | number | boolean)) return `must be one of ${schema.enum.join(", ")}`;
  if (typeof value === "number") {
    if (schema.minimum !== undefined && value < schema.minimum) return `must be at least ${schema.minimum}`;
    if (schema.maximum !== undefined && value > schema.maximum) return `must be at most ${schema.maximum}`;
  }
  if (typeof value === "string") {
    if (schema.maxLength !== undefined && value.length > schema.maxLength) return `must be at most ${schema.maxLength} characters`;
    if (schema.pattern !== undefined && !new RegExp(schema.pattern, "u").test(value)) return `must match ${schema.pattern}`;
  }
  return null;
}

/** One refused parameter: its name ("" for none in particular) and why. */
export interface ParameterProblem {
  name: string;
  problem: string;
}

/**
 * Every problem of a set of values for a version's declarations: unknown names, missing
 * required values (without a default) and values that break a declaration's schema.
 */
export function parameterProblems(declared: Record<string, ParameterRules>, given: Record<string, unknown>): ParameterProblem[] {
  const problems: ParameterProblem[] = [];
  for (const name of Object.keys(given)) {
    if (!Object.hasOwn(declared, name)) problems.push({ name, problem: `not a parameter of this version (known: ${Object.keys(declared).join(", ") || "none"})` });
  }
  for (const [name, declaration] of Object.entries(declared)) {
    if (!Object.hasOwn(given, name)) {
      if (declaration.required && (declaration.value === undefined || declaration.value === null)) problems.push({ name, problem: "required" });
      continue;
    }
    const problem = parameterValueProblem(declaration, given[name]);
    if (problem) problems.push({ name, problem });
  }
  return problems;
}
