// Labels (string to string) and label selectors (AND of key=value pairs): the zod schemas
// and the API's errors over the pure rules of ./selector.ts.
import { z } from "zod";
import { badRequest } from "../../trpc/errors.js";
import {
  LABEL_KEY_PATTERN, LABEL_KEY_RULE, LABEL_VALUE_PATTERN, LABEL_VALUE_RULE, MAX_LABELS_PER_DEVICE, parseSelector, SelectorError, type Labels,
} from "./selector.js";

export { LABEL_KEY_PATTERN, LABEL_VALUE_PATTERN, MAX_LABELS_PER_DEVICE, type Labels };

export const labelKey = z
  .string()
  .regex(LABEL_KEY_PATTERN, LABEL_KEY_RULE);
export const labelValue = z.string().regex(LABEL_VALUE_PATTERN, LABEL_VALUE_RULE);

/** A label set as stored on a device or applied by a token. */
export const labelsSchema = z
  .record(labelKey, labelValue)
  .refine((v) => Object.keys(v).length <= MAX_LABELS_PER_DEVICE, `at most ${MAX_LABELS_PER_DEVICE} labels`);

/** A selector object (spec op 12): every pair must match (AND); `{}` matches every device. */
export const labelSelectorSchema = z
  .record(labelKey, labelValue)
  .refine((v) => Object.keys(v).length <= MAX_LABELS_PER_DEVICE, `at most ${MAX_LABELS_PER_DEVICE} selector terms`);

/** Parses the query-string form `key=value,key2=value2`; throws 400 naming the bad term. */
export function parseSelectorString(text: string | undefined): Labels {
  try {
    return parseSelector(text);
  } catch (err) {
    if (err instanceof SelectorError) throw badRequest(err.message);
    throw err;
  }
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

/** Any key (statistics: an impossible key simply matches nothing) taken from a URL path. */
export const anyKeyInPath = z.string().min(1).max(256);
