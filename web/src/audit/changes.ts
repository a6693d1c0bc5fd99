// An audit entry's `changes` as rows a person can read: an update stores
// { field: { from, to } } (src/trpc/audit.ts's changedFields), a creation or an action the
// input it was given (secrets already masked by the service).
export interface ChangeRow {
  field: string;
  /** absent: the entry records a value, not a change */
  from?: string;
  to: string;
}

function text(value: unknown): string {
  if (value === undefined) return "—";
  if (typeof value === "string") return value;
  return JSON.stringify(value);
}

const isChange = (v: unknown): v is { from: unknown; to: unknown } =>
  !!v && typeof v === "object" && !Array.isArray(v) && Object.keys(v).length === 2 && "from" in v && "to" in v;

export function changeRows(changes: unknown): ChangeRow[] {
  if (changes === null || changes === undefined) return [];
  if (typeof changes !== "object" || Array.isArray(changes)) return [{ field: "value", to: text(changes) }];
  const entries = Object.entries(changes as Record<string, unknown>);
  if (entries.length > 0 && entries.every(([, v]) => isChange(v))) {
    return entries.map(([field, v]) => ({ field, from: text((v as { from: unknown }).from), to: text((v as { to: unknown }).to) }));
  }
  return entries.map(([field, v]) => ({ field, to: text(v) }));
}
