// Label keys, values and the text form of a selector (`key=value,key2=value2`): pure rules,
// with no dependency on the server, so that the web console checks what a person types by
// exactly the rules the API applies (web/src/devices/selector-input.tsx imports this file).
//
// Keys are restricted to a Kubernetes-like alphabet so that the text form is unambiguous:
// keys never contain `=` or `,`; values may contain anything printable except `,`.

export const MAX_LABELS_PER_DEVICE = 64;
export const LABEL_KEY_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._/-]{0,127}$/;
// No commas (the selector separator) and no control characters.
// eslint-disable-next-line no-control-regex
export const LABEL_VALUE_PATTERN = /^[^,\u0000-\u001f\u007f]{0,256}$/;
export const LABEL_KEY_RULE = "label keys are 1-128 characters: letters, digits, '.', '_', '/', '-', starting with a letter or digit";
export const LABEL_VALUE_RULE = "label values are at most 256 characters, without commas or control characters";

export type Labels = Record<string, string>;

/** A selector's text that breaks a rule; the message names the term. */
export class SelectorError extends Error {}

/** Parses `key=value,key2=value2` (each term split at its first `=`); throws SelectorError. */
export function parseSelector(text: string | undefined): Labels {
  const selector: Labels = {};
  if (!text || !text.trim()) return selector;
  for (const raw of text.split(",")) {
    const term = raw.trim();
    if (!term) continue;
    const eq = term.indexOf("=");
    if (eq <= 0) throw new SelectorError(`Invalid label selector term "${term.slice(0, 100)}": expected key=value`);
    const key = term.slice(0, eq).trim();
    const value = term.slice(eq + 1).trim();
    if (!LABEL_KEY_PATTERN.test(key)) throw new SelectorError(`Invalid label key "${key.slice(0, 100)}" in selector`);
    if (!LABEL_VALUE_PATTERN.test(value)) throw new SelectorError(`Invalid label value for "${key}" in selector`);
    if (key in selector && selector[key] !== value) throw new SelectorError(`Label selector names "${key}" twice with different values`);
    selector[key] = value;
  }
  if (Object.keys(selector).length > MAX_LABELS_PER_DEVICE) throw new SelectorError(`At most ${MAX_LABELS_PER_DEVICE} selector terms`);
  return selector;
}

/** The text form of a selector, keys in the order given. */
export function formatSelector(selector: Labels): string {
  return Object.entries(selector).map(([k, v]) => `${k}=${v}`).join(",");
}

/** Whether labels satisfy a selector: every term matches (the in-memory twin of `labels @> selector`). */
export function selectorMatches(selector: Labels, labels: Labels): boolean {
  for (const key of Object.keys(selector)) if (!Object.hasOwn(labels, key) || labels[key] !== selector[key]) return false;
  return true;
}

/**
 * Whether some label set satisfies both selectors: no key names two different values. Then a
 * device can match both (the labels that do: the union of the two).
 */
export function selectorsOverlap(a: Labels, b: Labels): boolean {
  for (const key of Object.keys(a)) if (Object.hasOwn(b, key) && b[key] !== a[key]) return false;
  return true;
}
