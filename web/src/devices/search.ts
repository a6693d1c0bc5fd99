// The device table's state lives in the URL (/devices?status=online,error&labels=site=berlin
// &sort=lastSeenAt&order=desc&offset=50), so a filtered view can be shared or bookmarked.
// Values that do not parse fall back to the defaults instead of breaking the page.
import * as z from "zod/mini";
import type { DeviceSort } from "./types";

export const DEVICE_SORTS = ["name", "status", "lastSeenAt", "createdAt", "statusChangedAt"] as const satisfies readonly DeviceSort[];
export const PAGE_SIZES = [25, 50, 100, 200] as const;

export const deviceListSearch = z.object({
  /** statuses, comma-separated */
  status: z.catch(z.optional(z.string().check(z.maxLength(200))), undefined),
  /** label selector key=value,key2=value2 */
  labels: z.catch(z.optional(z.string().check(z.maxLength(8000))), undefined),
  q: z.catch(z.optional(z.string().check(z.maxLength(200))), undefined),
  sort: z.catch(z.optional(z.enum(DEVICE_SORTS)), undefined),
  order: z.catch(z.optional(z.enum(["asc", "desc"])), undefined),
  offset: z.catch(z.optional(z.number().check(z.int(), z.nonnegative())), undefined),
  limit: z.catch(z.optional(z.union([z.literal(25), z.literal(50), z.literal(100), z.literal(200)])), undefined),
});
export type DeviceListSearch = z.infer<typeof deviceListSearch>;

export const DEVICE_TABS = ["telemetry", "logs", "activity", "certificates", "deployments", "configuration", "terminal", "sessions"] as const;
export type DeviceTab = (typeof DEVICE_TABS)[number];

export const deviceDetailSearch = z.object({
  tab: z.catch(z.optional(z.enum(DEVICE_TABS)), undefined),
  /** telemetry range: the last hour (default), day or week, or custom with from/to (ISO 8601) */
  range: z.catch(z.optional(z.enum(["1h", "24h", "7d", "custom"])), undefined),
  from: z.catch(z.optional(z.string().check(z.maxLength(40))), undefined),
  to: z.catch(z.optional(z.string().check(z.maxLength(40))), undefined),
  /** telemetry bucket size (op 11); none: the finest that keeps the range readable */
  interval: z.catch(z.optional(z.enum(["1m", "5m", "1h", "1d"])), undefined),
  /** logs: levels (comma-separated), source, text search, and whether new lines stream in */
  level: z.catch(z.optional(z.string().check(z.maxLength(40))), undefined),
  source: z.catch(z.optional(z.string().check(z.maxLength(100))), undefined),
  search: z.catch(z.optional(z.string().check(z.maxLength(200))), undefined),
  follow: z.catch(z.optional(z.boolean()), undefined),
  /** activity: page offset */
  offset: z.catch(z.optional(z.number().check(z.int(), z.nonnegative())), undefined),
  /** activity: event type */
  type: z.catch(z.optional(z.string().check(z.maxLength(40))), undefined),
});
export type DeviceDetailSearch = z.infer<typeof deviceDetailSearch>;
