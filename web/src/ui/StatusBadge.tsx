import type { DeviceStatus } from "../devices/types";

const LABELS: Record<DeviceStatus, string> = {
  online: "Online",
  offline: "Offline",
  error: "Error",
  pending: "Pending",
  provisioned: "Provisioned",
};

/** A device status as a coloured dot and a word (colour never carries the meaning alone). */
export function StatusBadge({ status }: { status: DeviceStatus }) {
  return (
    <span className={`badge badge--${status}`}>
      <span className="badge__dot" aria-hidden="true" />
      {LABELS[status] ?? status}
    </span>
  );
}

export function statusLabel(status: DeviceStatus): string {
  return LABELS[status] ?? status;
}
