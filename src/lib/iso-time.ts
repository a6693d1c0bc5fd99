// Instants in inputs (time ranges of telemetry, logs, audit and activity): one rule and one
// message naming the accepted forms, instead of zod's bare "Invalid input" for a union.
import { z } from "zod";

/** An ISO 8601 date-time with its offset, or a plain date (its start, in UTC). */
export const isoInstant = z.union([z.iso.datetime({ offset: true }), z.iso.date()], {
  error: "must be an ISO 8601 date-time with offset (2026-11-24T10:00:00Z) or a date (2026-11-24)",
});
