// The organization's remote-access policy, `settings.remoteAccess` (docs/remote-access.md):
// its schema (validated wherever the settings are written), its defaults (off until an
// administrator turns it on) and the reading of a stored value, which never fails: a value
// stored before validation existed, or by hand, falls back to the defaults field by field.
import { z } from "zod";
import { parseSelector, SelectorError, type Labels } from "../devices/selector.js";

export const REMOTE_ACCESS_DEFAULTS = {
  enabled: false,
  requireReason: false,
  deviceSelector: null as string | null,
  recordShell: false,
  recordingMaxBytes: 8 * 1024 * 1024,
  recordingRetentionDays: 90,
  idleTimeoutSeconds: 900,
  maxDurationSeconds: 14_400,
  maxSessionsPerUser: 5,
  maxSessionsPerDevice: 5,
  joinTimeoutSeconds: 30,
};
export type RemoteAccessSettings = typeof REMOTE_ACCESS_DEFAULTS;

/** Recordings are kept at most this long (ten years): a longer policy is an archive's, not ours. */
export const RECORDING_RETENTION_MAX_DAYS = 3650;

/** At most this many terms in the selector (the devices' own label limit is larger; a policy stays readable). */
export const MAX_SELECTOR_TERMS = 16;

const selectorText = z
  .string()
  .trim()
  .max(4000)
  .superRefine((text, ctx) => {
    try {
      const terms = Object.keys(parseSelector(text)).length;
      if (terms === 0) ctx.addIssue({ code: "custom", message: "an empty selector: use null to allow every device" });
      if (terms > MAX_SELECTOR_TERMS) ctx.addIssue({ code: "custom", message: `at most ${MAX_SELECTOR_TERMS} selector terms` });
    } catch (err) {
      if (err instanceof SelectorError) ctx.addIssue({ code: "custom", message: err.message });
      else throw err;
    }
  });

/** What may be written: every field optional (absent ones take the defaults), unknown fields refused. */
export const remoteAccessInput = z
  .object({
    enabled: z.boolean(),
    requireReason: z.boolean(),
    deviceSelector: selectorText.nullable().describe("label selector key=value,key2=value2: only matching devices may be reached; null: every device"),
    recordShell: z.boolean().describe("record shell sessions' output (asciicast v2)"),
    recordingMaxBytes: z.number().int().min(64 * 1024).max(64 * 1024 * 1024).describe("past this size a recording stops; the session does not"),
    recordingRetentionDays: z.number().int().min(1).max(RECORDING_RETENTION_MAX_DAYS).describe("recordings older than this are removed (the session rows stay, like the audit trail)"),
    idleTimeoutSeconds: z.number().int().min(30).max(86_400),
    maxDurationSeconds: z.number().int().min(60).max(7 * 86_400),
    maxSessionsPerUser: z.number().int().min(1).max(100),
    maxSessionsPerDevice: z.number().int().min(1).max(100),
    joinTimeoutSeconds: z.number().int().min(5).max(300).describe("a session the device has not joined by then ends device-never-joined"),
  })
  .partial()
  .strict();

export const remoteAccessOutput = z.object({
  enabled: z.boolean(),
  requireReason: z.boolean(),
  deviceSelector: z.string().nullable(),
  recordShell: z.boolean(),
  recordingMaxBytes: z.number().int(),
  recordingRetentionDays: z.number().int(),
  idleTimeoutSeconds: z.number().int(),
  maxDurationSeconds: z.number().int(),
  maxSessionsPerUser: z.number().int(),
  maxSessionsPerDevice: z.number().int(),
  joinTimeoutSeconds: z.number().int(),
});

/** The effective policy of stored organization settings. */
export function remoteAccessOf(settings: unknown): RemoteAccessSettings {
  const stored = settings && typeof settings === "object" ? (settings as Record<string, unknown>).remoteAccess : undefined;
  if (!stored || typeof stored !== "object") return { ...REMOTE_ACCESS_DEFAULTS };
  const result = { ...REMOTE_ACCESS_DEFAULTS };
  const shape = remoteAccessInput.shape;
  for (const [key, schema] of Object.entries(shape) as [keyof RemoteAccessSettings, z.ZodType][]) {
    const parsed = schema.safeParse((stored as Record<string, unknown>)[key]);
    if (parsed.success && parsed.data !== undefined) (result as Record<string, unknown>)[key] = parsed.data;
  }
  return result;
}

/** Whether a device's labels satisfy the policy's selector (every term must match). */
export function matchesSelector(policy: Pick<RemoteAccessSettings, "deviceSelector">, labels: unknown): boolean {
  if (!policy.deviceSelector) return true;
  let selector: Labels;
  try {
    selector = parseSelector(policy.deviceSelector);
  } catch {
    return false; // a selector nobody can read allows nothing
  }
  const own = labels && typeof labels === "object" ? (labels as Record<string, unknown>) : {};
  return Object.entries(selector).every(([k, v]) => own[k] === v);
}
