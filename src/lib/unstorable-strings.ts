// Strings PostgreSQL cannot store: `text` and `jsonb` refuse the NUL character (U+0000), and
// `jsonb` refuses an unpaired UTF-16 surrogate (JSON lets "\ud800" through, JavaScript keeps it,
// and node-postgres would silently turn it into U+FFFD in a `text` column). The HTTP boundary
// (src/http/storable-input.ts) refuses them in every request, before any handler runs; these
// are its pure parts.

export type JsonPath = (string | number)[];

export interface UnstorableString {
  /** where: the field's path, ending with the key itself when a key holds the character */
  path: JsonPath;
  /** true when an object key, not a value, holds the character */
  inKey: boolean;
  /** what is wrong, for the error message ("contains a NUL character (U+0000)") */
  problem: string;
}

// In a `u` regex, [\uD800-\uDFFF] matches only surrogates that are not half of a pair.
const UNSTORABLE = /[\u0000\uD800-\uDFFF]/u;
const EVERY_UNSTORABLE = /[\u0000\uD800-\uDFFF]/gu;

/** What makes `text` unstorable ("contains a NUL character (U+0000)"), or null when it can be stored. */
export function unstorableProblemOf(text: string): string | null {
  const found = UNSTORABLE.exec(text);
  if (!found) return null;
  if (found[0] === "\u0000") return "contains a NUL character (U+0000), which cannot be stored";
  const unit = found[0].charCodeAt(0).toString(16).toUpperCase();
  return `contains an unpaired UTF-16 surrogate (U+${unit}), which is not valid Unicode`;
}

interface Frame {
  value: unknown;
  key: string | number | undefined;
  parent: Frame | null;
}

function pathOf(frame: Frame): JsonPath {
  const path: JsonPath = [];
  for (let f: Frame | null = frame; f && f.key !== undefined; f = f.parent) path.push(f.key);
  return path.reverse();
}

/**
 * The first string (value or object key, in document order) of a parsed JSON value that
 * PostgreSQL cannot store, with its path; null when there is none. `tolerated(path)` exempts
 * values at the given paths (the lossy text fields, repaired by `repairUnstorableText`).
 * Iterative, so any nesting JSON.parse accepts is walked without exhausting the stack.
 */
export function findUnstorableString(value: unknown, tolerated?: (path: JsonPath) => boolean): UnstorableString | null {
  const stack: Frame[] = [{ value, key: undefined, parent: null }];
  while (stack.length > 0) {
    const frame = stack.pop()!;
    if (typeof frame.key === "string") {
      const problem = unstorableProblemOf(frame.key);
      if (problem) return { path: pathOf(frame), inKey: true, problem: `the key ${problem}` };
    }
    const v = frame.value;
    if (typeof v === "string") {
      const problem = unstorableProblemOf(v);
      if (problem) {
        const path = pathOf(frame);
        if (!tolerated?.(path)) return { path, inKey: false, problem };
      }
    } else if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push({ value: v[i], key: i, parent: frame });
    } else if (v !== null && typeof v === "object") {
      const keys = Object.keys(v);
      for (let i = keys.length - 1; i >= 0; i--) stack.push({ value: (v as Record<string, unknown>)[keys[i]], key: keys[i], parent: frame });
    }
  }
  return null;
}

/** A field path in which "*" stands for any array index or object key: ["entries", "*", "message"]. */
export type FieldPattern = readonly string[];

export function matchesPattern(path: JsonPath, pattern: FieldPattern): boolean {
  return path.length === pattern.length && pattern.every((part, i) => part === "*" || part === String(path[i]));
}

/** The text with every NUL and unpaired surrogate replaced by U+FFFD (the replacement character). */
export function storableText(text: string): string {
  return text.replace(EVERY_UNSTORABLE, "\uFFFD");
}

/**
 * Replaces, in place, NUL characters and unpaired surrogates by U+FFFD in the strings at
 * `pattern` inside `value` (a parsed JSON body it owns). Anything that is not where the
 * pattern says, or not a string, is left for the schema to judge.
 */
export function repairUnstorableText(value: unknown, pattern: FieldPattern): void {
  let level: unknown[] = [value];
  for (const [depth, part] of pattern.entries()) {
    const last = depth === pattern.length - 1;
    const next: unknown[] = [];
    for (const node of level) {
      if (node === null || typeof node !== "object") continue;
      const container = node as Record<string, unknown>;
      const keys = part === "*" ? Object.keys(container) : Object.hasOwn(container, part) ? [part] : [];
      for (const key of keys) {
        const child = container[key];
        if (!last) next.push(child);
        else if (typeof child === "string" && unstorableProblemOf(child)) container[key] = storableText(child);
      }
    }
    level = next;
  }
}
