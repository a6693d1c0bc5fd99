// GET /api/v1/alerts: the alerts themselves (one rule firing for one subject: a device, or a
// config source for config_source_failing), as the evaluation job keeps them in AlertState:
// what is firing now, and what resolved.
import { z } from "zod";
import type { DbTx } from "../../db/client.js";
import { pageOf, pageOutput, pagingInput } from "../../lib/paging.js";
import { conflict, notFound } from "../../trpc/errors.js";
import { conditionInput, SUBJECT_TYPES, summarize, type SubjectType } from "./conditions.js";
import { eventSubject, type AlertEventPayload } from "./events.js";
import { subjectInfo } from "./evaluate.js";
import { SEVERITIES } from "./schemas.js";

export const ALERT_STATES = ["firing", "resolved"] as const;

export const listAlertsInput = z.object({
  state: z.enum(ALERT_STATES).default("firing").describe("firing (default) or resolved"),
  severity: z.enum(SEVERITIES).optional(),
  deviceId: z.uuid().optional().describe("the alerts of this device"),
  subjectType: z.enum(SUBJECT_TYPES).optional().describe("device or config_source"),
  subjectId: z.uuid().optional().describe("the alerts of this subject (a device's or a config source's id)"),
  ruleId: z.uuid().optional(),
  ...pagingInput,
});

export const alertOutput = z.object({
  ruleId: z.string(),
  ruleName: z.string(),
  severity: z.enum(SEVERITIES),
  conditionType: z.string(),
  subjectType: z.enum(SUBJECT_TYPES).describe("what the alert is about: a device, or a config source (config_source_failing)"),
  subjectId: z.string().describe("the device's or the config source's id"),
  subjectName: z.string().nullable().describe("the device's or config source's name; null when it was deleted since"),
  deviceId: z.string().nullable().describe("the device (the subject when subjectType is device); null for a config source"),
  deviceName: z.string().nullable().describe("null when the device was deleted since, or the subject is a config source"),
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
    ...(input.deviceId ? { subjectType: "device", subjectId: input.deviceId } : {}),
    ...(input.subjectType ? { subjectType: input.subjectType } : {}),
    ...(input.subjectId ? { subjectId: input.subjectId } : {}),
    ...(input.ruleId ? { ruleId: input.ruleId } : {}),
    ...(input.severity ? { rule: { severity: input.severity } } : {}),
  };
  const [rows, total] = await Promise.all([
    db.alertState.findMany({
      where,
      orderBy: input.state === "firing" ? [{ firingSince: "desc" }, { subjectId: "asc" }] : [{ resolvedAt: "desc" }, { subjectId: "asc" }],
      take: input.limit,
      skip: input.offset,
      include: { rule: { select: { name: true, severity: true, conditionType: true } } },
    }),
    db.alertState.count({ where }),
  ]);
  // One lookup per kind of subject for the page's names (a subject may have been deleted since).
  const idsOf = (type: SubjectType) => [...new Set(rows.filter((r) => r.subjectType === type).map((r) => r.subjectId))];
  const [devices, sources] = await Promise.all([subjectInfo(db, organizationId, "device", idsOf("device")), subjectInfo(db, organizationId, "config_source", idsOf("config_source"))]);
  return pageOf(rows.map((r) => ({
    ruleId: r.ruleId,
    ruleName: r.rule.name,
    severity: r.rule.severity as (typeof SEVERITIES)[number],
    conditionType: r.rule.conditionType,
    ...eventSubject(r.subjectType as SubjectType, r.subjectId, ((r.subjectType === "config_source" ? sources : devices).get(r.subjectId))?.name ?? null),
    state: r.state as (typeof ALERT_STATES)[number],
    value: r.value,
    firingSince: r.firingSince.toISOString(),
    resolvedAt: r.resolvedAt?.toISOString() ?? null,
    acknowledgedAt: r.acknowledgedAt?.toISOString() ?? null,
    acknowledgedBy: r.acknowledgedBy,
    resolvedBy: r.resolvedBy,
  })), total, input.offset);
}

/** One alert: a rule's state for one subject (deviceId for a device, or subjectId for any subject). */
export const alertKeyInput = z.object({
  ruleId: z.uuid(),
  deviceId: z.uuid().optional().describe("the device the alert is about"),
  subjectId: z.uuid().optional().describe("the device or config source the alert is about (GET /alerts answers it)"),
}).refine((k) => (k.subjectId ?? k.deviceId) !== undefined, { message: "deviceId or subjectId is required", path: ["subjectId"] })
  .refine((k) => !k.subjectId || !k.deviceId || k.subjectId === k.deviceId, { message: "deviceId and subjectId name different subjects", path: ["subjectId"] });
interface AlertKey { ruleId: string; subjectId: string }
const keyOf = (input: z.infer<typeof alertKeyInput>): AlertKey => ({ ruleId: input.ruleId, subjectId: (input.subjectId ?? input.deviceId)! });
/** deviceId names a device's alert only */
const subjectFilter = (input: z.infer<typeof alertKeyInput>) => (input.deviceId ? { subjectType: "device" } : {});

async function actorEmail(db: DbTx, userId: string): Promise<string> {
  const user = await db.user.findUnique({ where: { id: userId }, select: { email: true } });
  return user?.email ?? "unknown user";
}

async function findFiring(db: DbTx, organizationId: string, input: z.infer<typeof alertKeyInput>) {
  const key = keyOf(input);
  const state = await db.alertState.findFirst({
    where: { organizationId, ruleId: key.ruleId, subjectId: key.subjectId, ...subjectFilter(input) },
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
export async function acknowledgeAlert(db: DbTx, organizationId: string, userId: string, input: z.infer<typeof alertKeyInput>) {
  const key = keyOf(input);
  await findFiring(db, organizationId, input);
  await db.alertState.update({
    where: { ruleId_subjectId: key },
    data: { acknowledgedAt: new Date(), acknowledgedBy: await actorEmail(db, userId) },
  });
  return alertDto(db, organizationId, key);
}

/**
 * Resolves a firing alert by hand. It notifies no target; if the condition still holds at the
 * next evaluation the alert fires again (a new alert, notified once the rule's cooldown allows).
 * Answers the alert and the event the realtime channel publishes after the commit.
 */
export async function resolveAlert(db: DbTx, organizationId: string, userId: string, input: z.infer<typeof alertKeyInput>) {
  const key = keyOf(input);
  const state = await findFiring(db, organizationId, input);
  const now = new Date();
  await db.alertState.update({
    where: { ruleId_subjectId: key },
    data: { state: "resolved", resolvedAt: now, resolvedBy: await actorEmail(db, userId) },
  });
  const alert = await alertDto(db, organizationId, key);
  const condition = conditionInput.parse(state.rule.condition);
  const event: AlertEventPayload = {
    organizationId, ruleId: key.ruleId, ruleName: state.rule.name, severity: state.rule.severity, condition,
    summary: summarize(condition), ...eventSubject(alert.subjectType, alert.subjectId, alert.subjectName), value: state.value, at: now.toISOString(),
  };
  return { alert, event };
}
