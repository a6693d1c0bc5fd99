// Templates in configuration values and files: `{{ device.name }}`, `{{ device.id }}`,
// `{{ device.labels.KEY }}`, `{{ device.facts.NAME }}`, `{{ vars.NAME }}`, nothing else.
//
// A tiny strict parser rather than a template library: label keys may hold `.` and `/`
// (`app.kubernetes.io/name`), which the dotted paths of Liquid, Handlebars or Mustache cannot
// address without quoting; none of them refuses an unknown name with the name in the error
// without options that still let through loops, includes and filters (Liquid's `{% include %}`
// reads files, Handlebars compiles templates to functions). Configuration needs substitution
// and a precise refusal, so that is all this does. Pure: the console can import it.

export type Reference =
  | { root: "device"; field: "name" | "id" }
  | { root: "labels"; key: string }
  | { root: "facts"; key: string }
  | { root: "vars"; key: string };

export type Piece = string | { ref: Reference; text: string };

/** A template that cannot be read (an unclosed `{{`, an expression that is none of the forms). */
export class TemplateSyntaxError extends Error {}

export const VARIABLE_NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
const LABEL_KEY = /^[A-Za-z0-9][A-Za-z0-9._/-]{0,127}$/;
const FACT_NAME = /^[A-Za-z][A-Za-z0-9_.-]{0,99}$/;

function referenceOf(expression: string): Reference | null {
  if (expression === "device.name") return { root: "device", field: "name" };
  if (expression === "device.id") return { root: "device", field: "id" };
  const prefixed = (prefix: string, pattern: RegExp) => (expression.startsWith(prefix) && pattern.test(expression.slice(prefix.length)) ? expression.slice(prefix.length) : null);
  const label = prefixed("device.labels.", LABEL_KEY);
  if (label !== null) return { root: "labels", key: label };
  const fact = prefixed("device.facts.", FACT_NAME);
  if (fact !== null) return { root: "facts", key: fact };
  const variable = prefixed("vars.", VARIABLE_NAME_PATTERN);
  if (variable !== null) return { root: "vars", key: variable };
  return null;
}

/** Splits a template into text and references; throws TemplateSyntaxError. */
export function parseTemplate(template: string): Piece[] {
  const pieces: Piece[] = [];
  let at = 0;
  while (at < template.length) {
    const open = template.indexOf("{{", at);
    if (open < 0) break;
    const close = template.indexOf("}}", open + 2);
    if (close < 0) throw new TemplateSyntaxError(`"{{" at character ${open + 1} is never closed with "}}"`);
    const expression = template.slice(open + 2, close).trim();
    const ref = referenceOf(expression);
    if (!ref) {
      throw new TemplateSyntaxError(
        `"{{ ${expression.slice(0, 100)} }}" is not a reference: use device.name, device.id, device.labels.KEY, device.facts.NAME or vars.NAME`,
      );
    }
    if (open > at) pieces.push(template.slice(at, open));
    pieces.push({ ref, text: `{{ ${expression} }}` });
    at = close + 2;
  }
  if (at < template.length) pieces.push(template.slice(at));
  return pieces;
}

/** Whether a text holds any template expression (most values hold none: they are taken as they are). */
export function hasTemplate(text: string): boolean {
  return text.includes("{{");
}

/** The names of the variables a template refers to. */
export function variablesOf(pieces: Piece[]): string[] {
  return pieces.flatMap((p) => (typeof p !== "string" && p.ref.root === "vars" ? [p.ref.key] : []));
}

/** How a reference is written in messages (`device.labels.site`, `vars.MQTT_URL`). */
export function referenceName(ref: Reference): string {
  switch (ref.root) {
    case "device": return `device.${ref.field}`;
    case "labels": return `device.labels.${ref.key}`;
    case "facts": return `device.facts.${ref.key}`;
    case "vars": return `vars.${ref.key}`;
  }
}

/**
 * Substitutes each reference with `resolve`'s value; `resolve` answers undefined for a name
 * that has none, and the first such reference is thrown back as `missing`.
 */
export function renderPieces(pieces: Piece[], resolve: (ref: Reference) => string | undefined): { text: string } | { missing: Reference } {
  let text = "";
  for (const piece of pieces) {
    if (typeof piece === "string") {
      text += piece;
      continue;
    }
    const value = resolve(piece.ref);
    if (value === undefined) return { missing: piece.ref };
    text += value;
  }
  return { text };
}
