// A compose deployment's parameters may take a device's variables (`{{ vars.MQTT_URL }}`): they
// are rendered per device before the heartbeat answers, so the agent sees plain values, and the
// desired deployment then carries parametersHash (sha256 of the rendered parameters), which
// changes when the device's variables do: the agent re-creates the deployment in place.
// Parameters without a template are answered as they are and carry no hash (nothing to restart for).
import { createHash } from "node:crypto";
import { canonicalJson } from "./effective.js";
import { hasTemplate, parseTemplate, renderPieces, TemplateSyntaxError } from "./template.js";

type Variables = () => Record<string, string> | null;

/**
 * A string with `{{ vars.NAME }}` rendered. A name the device has no variable of (or a text
 * that is no template) stays as written: the deployment still starts, and the effective view
 * shows which variables the device has.
 */
function renderText(text: string, variables: Variables): string {
  let pieces;
  try {
    pieces = parseTemplate(text);
  } catch (err) {
    if (err instanceof TemplateSyntaxError) return text;
    throw err;
  }
  const vars = variables() ?? {};
  const result = renderPieces(pieces, (ref) => (ref.root === "vars" && Object.hasOwn(vars, ref.key) ? vars[ref.key] : undefined));
  if ("text" in result) return result.text;
  // one name missing: render the others, keep that one's expression
  return pieces.map((p) => (typeof p === "string" ? p : p.ref.root === "vars" && Object.hasOwn(vars, p.ref.key) ? vars[p.ref.key] : p.text)).join("");
}

function renderValue(value: unknown, variables: Variables, found: { template: boolean }): unknown {
  if (typeof value === "string") {
    if (!hasTemplate(value)) return value;
    found.template = true;
    return renderText(value, variables);
  }
  if (Array.isArray(value)) return value.map((v) => renderValue(v, variables, found));
  if (value && typeof value === "object") {
    return Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, renderValue(v, variables, found)]));
  }
  return value;
}

export function withDeviceVariables<P extends Record<string, unknown>>(parameters: P, variables: Variables): { parameters: P; parametersHash?: string } {
  const found = { template: false };
  const rendered = renderValue(parameters, variables, found) as P;
  if (!found.template) return { parameters };
  return { parameters: rendered, parametersHash: createHash("sha256").update(canonicalJson(rendered)).digest("hex") };
}
