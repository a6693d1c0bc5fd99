// Alert evaluation, run by the "alerts.evaluate" schedule (one process at a time across the
// installation). Per enabled rule: one query finds the subjects (devices, or config sources for
// config_source_failing) for which the condition holds (conditions.ts), then set-based
// statements move the per-subject states:
//   not firing -> firing   for matching subjects (notified unless within the cooldown)
//   firing -> resolved     for subjects that stopped matching (notified when their firing was)
// Deliveries and their jobs are written in the same transaction as the state changes; the
// alert events go to the event bus (realtime) after the commit.
import type { Services } from "../../services.js";
import { eventBusOf } from "../../lib/events.js";
import { enqueueNotification } from "../notification-targets/deliveries.js";
import type { DbTx } from "../../db/client.js";
import type { NotificationSubject } from "../notification-targets/senders.js";
import { conditionInput, conditionMatches, subjectTypeOf, summarize, type Condition, type SubjectType } from "./conditions.js";
import { eventSubject, type AlertEventPayload } from "./events.js";
import { counted } from "../../lib/plural.js";

export interface EvaluationResult {
  rules: number;
  fired: number;
  resolved: number;
  notifications: number;
}

interface Transition {
  subjectId: string;
  value: number | null;
  firingSince: Date;
  lastNotifiedAt: Date | null;
}

type RuleWithTargets = Awaited<ReturnType<typeof loadRules>>[number];

function loadRules(services: Services, organizationId?: string) {
  return services.prisma.alertRule.findMany({
    where: { enabled: true, ...(organizationId ? { organizationId } : {}) },
    include: { targets: { include: { target: { select: { id: true, name: true, type: true, enabled: true } } } } },
    orderBy: { createdAt: "asc" },
  });
}

const formatValue = (v: number | null) => (v == null ? "" : ` (${Number.isInteger(v) ? v : v.toFixed(2)})`);

const NOUN: Record<SubjectType, string> = { device: "device", config_source: "config source" };

function describe(rule: RuleWithTargets, summary: string, verb: string, subjectType: SubjectType, subjects: Array<{ name: string | null; value: number | null; detail?: string | null }>) {
  const noun = NOUN[subjectType];
  const listed = subjects.slice(0, 5).map((d) => `${d.name ?? `unknown ${noun}`}${formatValue(d.value)}${d.detail ? ` (${d.detail.slice(0, 300)})` : ""}`).join(", ");
  const more = subjects.length > 5 ? ` and ${subjects.length - 5} more` : "";
  return `[${rule.severity}] ${rule.name}: ${summary}: ${verb} on ${counted(subjects.length, noun)}: ${listed}${more}`;
}

export interface SubjectInfo {
  name: string | null;
  /** a config source's last sync message */
  detail: string | null;
}

/** The names of the subjects (one query per kind of subject); a deleted one is missing. */
export async function subjectInfo(db: DbTx, organizationId: string, subjectType: SubjectType, ids: string[]): Promise<Map<string, SubjectInfo>> {
  if (ids.length === 0) return new Map();
  if (subjectType === "config_source") {
    const rows = await db.configSource.findMany({ where: { organizationId, id: { in: ids } }, select: { id: true, name: true, lastSyncStatus: true, lastSyncMessage: true } });
    return new Map(rows.map((r) => [r.id, { name: r.name, detail: r.lastSyncStatus === "applied" ? null : r.lastSyncMessage }]));
  }
  const rows = await db.device.findMany({ where: { organizationId, id: { in: ids } }, select: { id: true, name: true } });
  return new Map(rows.map((r) => [r.id, { name: r.name, detail: null }]));
}

async function evaluateRule(services: Services, rule: RuleWithTargets, now: Date) {
  const parsed = conditionInput.safeParse(rule.condition);
  if (!parsed.success) {
    services.logger.warn({ ruleId: rule.id }, "alert rule has an invalid condition; skipped");
    return { fired: [] as Transition[], resolved: [] as Transition[], notifications: 0, names: new Map<string, SubjectInfo>(), subjectType: "device" as SubjectType };
  }
  const condition: Condition = parsed.data;
  const subjectType = subjectTypeOf(condition.type);
  const scope = { organizationId: rule.organizationId, labelSelector: (rule.labelSelector ?? {}) as Record<string, string> };
  const matches = await conditionMatches(services.prisma, scope, condition, now);
  const ids = matches.map((m) => m.subjectId);
  const values = matches.map((m) => m.value);
  const at = now.toISOString();
  const cooldownEnds = new Date(now.getTime() - rule.cooldownSeconds * 1000);
  const summary = summarize(condition);
  const targets = rule.targets.map((t) => t.target).filter((t) => t.enabled);

  return services.prisma.$transaction(async (tx) => {
    const fired = await tx.$queryRaw<Transition[]>`
      INSERT INTO "AlertState" ("ruleId", "subjectType", "subjectId", "organizationId", "state", "value", "firingSince", "updatedAt")
      SELECT ${rule.id}::uuid, ${subjectType}, m."subjectId", ${rule.organizationId}::uuid, 'firing', m."value", ${at}::timestamptz, ${at}::timestamptz
        FROM unnest(${ids}::uuid[], ${values}::float8[]) AS m("subjectId", "value")
      ON CONFLICT ("ruleId", "subjectId") DO UPDATE
        SET "state" = 'firing', "subjectType" = excluded."subjectType", "value" = excluded."value", "firingSince" = excluded."firingSince", "resolvedAt" = NULL,
            "updatedAt" = excluded."updatedAt", "acknowledgedAt" = NULL, "acknowledgedBy" = NULL, "resolvedBy" = NULL
        WHERE "AlertState"."state" <> 'firing'
      RETURNING "subjectId"::text, "value", "firingSince", "lastNotifiedAt"`;
    const resolved = await tx.$queryRaw<Transition[]>`
      UPDATE "AlertState" SET "state" = 'resolved', "resolvedAt" = ${at}::timestamptz, "updatedAt" = ${at}::timestamptz
       WHERE "ruleId" = ${rule.id}::uuid AND "state" = 'firing' AND NOT ("subjectId" = ANY(${ids}::uuid[]))
      RETURNING "subjectId"::text, "value", "firingSince", "lastNotifiedAt"`;
    // Firing is notified unless the device was notified for this rule within the cooldown;
    // resolution is notified when the firing it ends was.
    const notifyFired = fired.filter((f) => !f.lastNotifiedAt || new Date(f.lastNotifiedAt) <= cooldownEnds);
    const notifyResolved = resolved.filter((r) => r.lastNotifiedAt && new Date(r.lastNotifiedAt) >= new Date(r.firingSince));
    await tx.alertRule.update({ where: { id: rule.id }, data: { lastEvaluatedAt: now } });

    const names = await subjectInfo(tx, rule.organizationId, subjectType, [...fired, ...resolved].map((t) => t.subjectId));
    let notifications = 0;
    if (targets.length > 0) {
      for (const [event, group] of [["firing", notifyFired], ["resolved", notifyResolved]] as const) {
        if (group.length === 0) continue;
        const subjects = group.map((g): NotificationSubject => ({
          type: subjectType, id: g.subjectId, name: names.get(g.subjectId)?.name ?? null, value: g.value == null ? null : Number(g.value),
          ...(subjectType === "config_source" ? { detail: event === "firing" ? names.get(g.subjectId)?.detail ?? null : null } : {}),
        }));
        const devices = subjectType === "device" ? subjects.map(({ id, name, value }) => ({ id, name, value })) : [];
        await enqueueNotification(tx, services.config, {
          organizationId: rule.organizationId,
          ruleId: rule.id,
          event,
          rule: { id: rule.id, name: rule.name, severity: rule.severity, summary, condition },
          devices,
          deviceCount: devices.length,
          subjectType,
          subjects,
          subjectCount: subjects.length,
          message: describe(rule, summary, event, subjectType, subjects),
          targets,
        });
        notifications += targets.length;
      }
      if (notifyFired.length > 0) {
        await tx.$executeRaw`UPDATE "AlertState" SET "lastNotifiedAt" = ${at}::timestamptz
          WHERE "ruleId" = ${rule.id}::uuid AND "subjectId" = ANY(${notifyFired.map((f) => f.subjectId)}::uuid[])`;
      }
    }
    return { fired, resolved, notifications, names, subjectType };
  });
}

/** Evaluates every enabled rule (of one organization, when given). */
export async function evaluateRulesOnce(services: Services, options: { now?: Date; organizationId?: string; signal?: AbortSignal } = {}): Promise<EvaluationResult> {
  const now = options.now ?? new Date();
  const rules = await loadRules(services, options.organizationId);
  const result: EvaluationResult = { rules: 0, fired: 0, resolved: 0, notifications: 0 };
  const bus = eventBusOf(services);
  for (const rule of rules) {
    if (options.signal?.aborted) break;
    try {
      const outcome = await evaluateRule(services, rule, now);
      result.rules++;
      result.fired += outcome.fired.length;
      result.resolved += outcome.resolved.length;
      result.notifications += outcome.notifications;
      const condition = rule.condition as Condition;
      const event = (t: Transition): AlertEventPayload => ({
        organizationId: rule.organizationId,
        ruleId: rule.id,
        ruleName: rule.name,
        severity: rule.severity,
        condition,
        summary: summarize(condition),
        ...eventSubject(outcome.subjectType, t.subjectId, outcome.names.get(t.subjectId)?.name ?? null),
        value: t.value == null ? null : Number(t.value),
        at: now.toISOString(),
      });
      bus.publishAll("alert.firing", outcome.fired.map(event));
      bus.publishAll("alert.resolved", outcome.resolved.map(event));
    } catch (err) {
      // One broken rule must not stop the others.
      services.logger.error({ err: (err as Error).message, ruleId: rule.id }, "alert rule evaluation failed");
    }
  }
  return result;
}
