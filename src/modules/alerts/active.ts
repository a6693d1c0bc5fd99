// GET /api/v1/alerts: the alerts themselves (one rule firing for one device), as the
// evaluation job keeps them in AlertState: what is firing now, and what resolved.
import { z } from "zod";
import type { DbTx } from "../../db/client.js";
import { pageOf, pageOutput, pagingInput } from "../../lib/paging.js";
import { conflict, notFound } from "../../trpc/errors.js";
import { conditionInput, summarize } from "./conditions.js";
import type { AlertEventPayload } from "./events.js";
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
  acknowledgedAt: z.string().datetime().nullable().describe("when someone took the firing alert on; cleared when it fires anew"),
  acknowledgedBy: z.string().nullable().describe("who acknowledged it (e-mail)"),
  resolvedBy: z.string().nullable().describe("who resolved it by hand; null when the evaluation resolved it"),
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
    acknowledgedAt: r.acknowledgedAt?.toISOString() ?? null,
    acknowledgedBy: r.acknowledgedBy,
    resolvedBy: r.resolvedBy,
  })), total, input.offset);
}

/** One alert: a rule's state for one device. */
export const alertKeyInput = z.object({ ruleId: z.uuid(), deviceId: z.uuid() });
type AlertKey = z.infer<typeof alertKeyInput>;

async function actorEmail(db: DbTx, userId: string): Promise<string> {
  const user = await db.user.findUnique({ where: { id: userId }, select: { email: true } });
  return user?.email ?? "unknown user";
}

async function findFiring(db: DbTx, organizationId: string, key: AlertKey) {
  const state = await db.alertState.findFirst({
    where: { organizationId, ruleId: key.ruleId, deviceId: key.deviceId },
    include: { rule: { select: { name: true, severity: true, conditionType: true, condition: true } } },
  });
  if (!state) throw notFound("Alert");
  if (state.state !== "firing") throw conflict("The alert is not firing (it has resolved)");
  return state;
}

async function alertDto(db: DbTx, organizationId: string, key: AlertKey) {
  const page = await listAlerts(db, organizationId, { ...key, state: "resolved", limit: 1, offset: 0 });
  if (page.items[0]) return page.items[0];
  return (await listAlerts(db, organizationId, { ...key, state: "firing", limit: 1, offset: 0 })).items[0];
}

/** Marks a firing alert as taken on: it keeps firing (and counting) until its condition ends. */
export async function acknowledgeAlert(db: DbTx, organizationId: string, userId: string, key: AlertKey) {
  await findFiring(db, organizationId, key);
  await db.alertState.update({
    where: { ruleId_deviceId: key },
    data: { acknowledgedAt: new Date(), acknowledgedBy: await actorEmail(db, userId) },
  });
  return alertDto(db, organizationId, key);
}

/**
 * Resolves a firing alert by hand. It notifies no target; if the condition still holds at the
 * next evaluation the alert fires again (a new alert, notified once the rule's cooldown allows).
 * Answers the alert and the event the realtime channel publishes after the commit.
 */
export async function resolveAlert(db: DbTx, organizationId: string, userId: string, key: AlertKey) {
  const state = await findFiring(db, organizationId, key);
  const now = new Date();
  await db.alertState.update({
    where: { ruleId_deviceId: key },
    data: { state: "resolved", resolvedAt: now, resolvedBy: await actorEmail(db, userId) },
  });
  const alert = await alertDto(db, organizationId, key);
  const condition = conditionInput.parse(state.rule.condition);
  const event: AlertEventPayload = {
    organizationId, ruleId: key.ruleId, ruleName: state.rule.name, severity: state.rule.severity, condition,
    summary: summarize(condition), deviceId: key.deviceId, deviceName: alert.deviceName, value: state.value, at: now.toISOString(),
  };
  return { alert, event };
}
