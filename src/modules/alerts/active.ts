// GET /api/v1/alerts: the alerts themselves (one rule firing for one device), as the
// evaluation job keeps them in AlertState: what is firing now, and what resolved.
import { z } from "zod";
import type { DbTx } from "../../db/client.js";
import { pageOf, pageOutput, pagingInput } from "../../lib/paging.js";
import { SEVERITIES } from "./schemas.js";

export const ALERT_STATES = ["firing", "resolved"] as const;

export const listAlertsInput = z.object({
  state: z.enum(ALERT_STATES).default("firing").describe("firing (default) or resolved"),
  severity: z.enum(SEVERITIES).optional(),
  deviceId: z.uuid().optional(),
  ruleId: z.uuid().optional(),
  ...pagingInput,
});

export const alertOutput = z.object({
  ruleId: z.string(),
  ruleName: z.string(),
  severity: z.enum(SEVERITIES),
  conditionType: z.string(),
  deviceId: z.string(),
  deviceName: z.string().nullable().describe("null when the device was deleted since"),
  state: z.enum(ALERT_STATES),
  value: z.number().nullable().describe("the observed value that decided the last transition (metric rules)"),
  firingSince: z.string().datetime(),
  resolvedAt: z.string().datetime().nullable(),
});
export const alertPageOutput = pageOutput(alertOutput);

/** Newest first: firing alerts by when they started, resolved ones by when they ended. */
export async function listAlerts(db: DbTx, organizationId: string, input: z.infer<typeof listAlertsInput>) {
  const where = {
    organizationId,
    state: input.state,
    ...(input.deviceId ? { deviceId: input.deviceId } : {}),
    ...(input.ruleId ? { ruleId: input.ruleId } : {}),
    ...(input.severity ? { rule: { severity: input.severity } } : {}),
  };
  const [rows, total] = await Promise.all([
    db.alertState.findMany({
      where,
      orderBy: input.state === "firing" ? [{ firingSince: "desc" }, { deviceId: "asc" }] : [{ resolvedAt: "desc" }, { deviceId: "asc" }],
      take: input.limit,
      skip: input.offset,
      include: { rule: { select: { name: true, severity: true, conditionType: true } } },
    }),
    db.alertState.count({ where }),
  ]);
  // One lookup for the page's device names (a device may have been deleted since).
  const devices = await db.device.findMany({ where: { organizationId, id: { in: [...new Set(rows.map((r) => r.deviceId))] } }, select: { id: true, name: true } });
  const names = new Map(devices.map((d) => [d.id, d.name]));
  return pageOf(rows.map((r) => ({
    ruleId: r.ruleId,
    ruleName: r.rule.name,
    severity: r.rule.severity as (typeof SEVERITIES)[number],
    conditionType: r.rule.conditionType,
    deviceId: r.deviceId,
    deviceName: names.get(r.deviceId) ?? null,
    state: r.state as (typeof ALERT_STATES)[number],
    value: r.value,
    firingSince: r.firingSince.toISOString(),
    resolvedAt: r.resolvedAt?.toISOString() ?? null,
  })), total, input.offset);
}
