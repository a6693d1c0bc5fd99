// The alert events on the event bus (src/lib/events.ts): the realtime channel forwards them,
// and any other capability may subscribe. Declared here by module augmentation, so the bus's
// file does not need to know about alerts.
import type { Condition, SubjectType } from "./conditions.js";

export interface AlertEventPayload {
  organizationId: string;
  ruleId: string;
  ruleName: string;
  severity: string;
  condition: Condition;
  /** "cpuUsagePercent > 90 for 5m" */
  summary: string;
  /** what the alert is about: a device, or a config source (config_source_failing) */
  subjectType: SubjectType;
  subjectId: string;
  subjectName: string | null;
  /** the device's id and name; null when the subject is a config source */
  deviceId: string | null;
  deviceName: string | null;
  /** the observed value (metric reading, seconds offline, days left), when there is one */
  value: number | null;
  /** ISO 8601 time of the transition */
  at: string;
}

/** The subject fields of an alert (event or answer): deviceId/deviceName stay for devices. */
export function eventSubject(subjectType: SubjectType, subjectId: string, subjectName: string | null) {
  const device = subjectType === "device";
  return { subjectType, subjectId, subjectName, deviceId: device ? subjectId : null, deviceName: device ? subjectName : null };
}

declare module "../../lib/events.js" {
  interface FleetEvents {
    "alert.firing": AlertEventPayload;
    "alert.resolved": AlertEventPayload;
  }
}
