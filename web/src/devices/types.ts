// Device shapes as the API answers them, derived from the router (never copied by hand).
import type { RouterInputs, RouterOutputs } from "../api/client";

export type Device = RouterOutputs["devices"]["get"];
export type DeviceStatus = Device["status"];
export type DeviceSort = NonNullable<RouterInputs["devices"]["list"]["sort"]>;

/** The statuses in the order the console shows them; checked against the API's type. */
export const DEVICE_STATUSES = ["online", "offline", "error", "pending", "provisioned"] as const satisfies readonly DeviceStatus[];

export const STATUS_COLORS: Record<DeviceStatus, string> = {
  online: "var(--status-online)",
  offline: "var(--status-offline)",
  error: "var(--status-error)",
  pending: "var(--status-pending)",
  provisioned: "var(--status-provisioned)",
};
