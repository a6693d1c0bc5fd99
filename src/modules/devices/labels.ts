// Labels (string to string) and label selectors (AND of key=value pairs).
//
// Keys are restricted to a Kubernetes-like alphabet so that the query-string form of a
// selector (`labels=site=berlin,tier=core`) is unambiguous: keys never contain `=` or `,`;
// values may contain anything printable except `,`.
import { z } from "zod";
import { badRequest } from "../../trpc/errors.js";

export const MAX_LABELS_PER_DEVICE = 64;
export const LABEL_KEY_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._/-]{0,127}$/;
// No commas (the selector separator) and no control characters.
// eslint-disable-next-line no-control-regex
export const LABEL_VALUE_PATTERN = /^[^,\u0000-\u001f\u007f]{0,256}$/;

export const labelKey = z
  .string()
  .regex(LABEL_KEY_PATTERN, "label keys are 1-128 characters: letters, digits, '.', '_', '/', '-', starting with a letter or digit");
export const labelValue = z.string().regex(LABEL_VALUE_PATTERN, "label values are at most 256 characters, without commas or control characters");

export type Labels = Record<string, string>;

/** A label set as stored on a device or applied by a token. */
export const labelsSchema = z
  .record(labelKey, labelValue)
  .refine((v) => Object.keys(v).length <= MAX_LABELS_PER_DEVICE, `at most ${MAX_LABELS_PER_DEVICE} labels`);

/** A selector object (spec op 12): every pair must match (AND); `{}` matches every device. */
export const labelSelectorSchema = z
  .record(labelKey, labelValue)
  .refine((v) => Object.keys(v).length <= MAX_LABELS_PER_DEVICE, `at most ${MAX_LABELS_PER_DEVICE} selector terms`);

/**
 * Parses the query-string form `key=value,key2=value2` (split at the first `=`).
 * Throws 400 naming the bad term.
 */
export function parseSelectorString(text: string | undefined): Labels {
  const selector: Labels = {};
  if (!text || !text.trim()) return selector;
  for (const raw of text.split(",")) {
    const term = raw.trim();
    if (!term) continue;
    const eq = term.indexOf("=");
    if (eq <= 0) throw badRequest(`Invalid label selector term "${term.slice(0, 100)}": expected key=value`);
    const key = term.slice(0, eq).trim();
    const value = term.slice(eq + 1).trim();
    if (!LABEL_KEY_PATTERN.test(key)) throw badRequest(`Invalid label key "${key.slice(0, 100)}" in selector`);
    if (!LABEL_VALUE_PATTERN.test(value)) throw badRequest(`Invalid label value for "${key}" in selector`);
    if (key in selector && selector[key] !== value) throw badRequest(`Label selector names "${key}" twice with different values`);
    selector[key] = value;
  }
  if (Object.keys(selector).length > MAX_LABELS_PER_DEVICE) throw badRequest(`At most ${MAX_LABELS_PER_DEVICE} selector terms`);
  return selector;
}

/** Labels read from a JSONB column: anything that is not a string value is dropped. */
export function labelsOf(value: unknown): Labels {
  if (!value || typeof value !== "object" || Array.isArray(value)) return {};
  const out: Labels = {};
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) if (typeof v === "string") out[k] = v;
  return out;
}

/** Keys whose value differs between two label sets (added, changed or removed). */
export function labelDiff(before: Labels, after: Labels) {
  const added: Labels = {};
  const removed: string[] = [];
  for (const [k, v] of Object.entries(after)) if (before[k] !== v) added[k] = v;
  for (const k of Object.keys(before)) if (!(k in after)) removed.push(k);
  return { added, removed, changed: Object.keys(added).length > 0 || removed.length > 0 };
}

/**
 * The REST facade hands path parameters over still percent-encoded (trpc-to-openapi does not
 * decode them), so `/labels/env%2Fstage` must be decoded here, exactly once. Label keys never
 * contain `%`, so decoding cannot turn one valid key into another.
 */
export function decodePathSegment(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}

/** A label key taken from a URL path. */
export const labelKeyInPath = z.string().max(400).transform(decodePathSegment).pipe(labelKey);
/** Any key (statistics: an impossible key simply matches nothing) taken from a URL path. */
export const anyKeyInPath = z.string().min(1).max(800).transform(decodePathSegment).pipe(z.string().min(1).max(256));
