// The alert events on the event bus (src/lib/events.ts): the realtime channel forwards them,
// and any other capability may subscribe. Declared here by module augmentation, so the bus's
// file does not need to know about alerts.
import type { Condition } from "./conditions.js";

export interface AlertEventPayload {
  organizationId: string;
  ruleId: string;
  ruleName: string;
  severity: string;
  condition: Condition;
  /** "cpuUsagePercent > 90 for 5m" */
  summary: string;
  deviceId: string;
  deviceName: string | null;
  /** the observed value (metric reading, seconds offline, days left), when there is one */
  value: number | null;
  /** ISO 8601 time of the transition */
  at: string;
}

declare module "../../lib/events.js" {
  interface FleetEvents {
    "alert.firing": AlertEventPayload;
    "alert.resolved": AlertEventPayload;
  }
}
