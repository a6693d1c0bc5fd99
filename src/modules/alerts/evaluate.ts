// Alert evaluation, run by the "alerts.evaluate" schedule (one process at a time across the
// installation). Per enabled rule: one query finds the devices for which the condition holds
// (conditions.ts), then set-based statements move the per-device states:
//   not firing -> firing   for matching devices (notified unless within the cooldown)
//   firing -> resolved     for devices that stopped matching (notified when their firing was)
// Deliveries and their jobs are written in the same transaction as the state changes; the
// alert events go to the event bus (realtime) after the commit.
import type { Services } from "../../services.js";
import { eventBusOf } from "../../lib/events.js";
import { enqueueNotification } from "../notification-targets/deliveries.js";
import { conditionInput, conditionMatches, summarize, type Condition } from "./conditions.js";
import type { AlertEventPayload } from "./events.js";
import { counted } from "../../lib/plural.js";

export interface EvaluationResult {
  rules: number;
  fired: number;
  resolved: number;
  notifications: number;
}

interface Transition {
  deviceId: string;
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

function describe(rule: RuleWithTargets, summary: string, verb: string, devices: Array<{ name: string | null; value: number | null }>) {
  const listed = devices.slice(0, 5).map((d) => `${d.name ?? "unknown device"}${formatValue(d.value)}`).join(", ");
  const more = devices.length > 5 ? ` and ${devices.length - 5} more` : "";
  return `[${rule.severity}] ${rule.name}: ${summary}: ${verb} on ${counted(devices.length, "device")}: ${listed}${more}`;
}

async function evaluateRule(services: Services, rule: RuleWithTargets, now: Date) {
  const parsed = conditionInput.safeParse(rule.condition);
  if (!parsed.success) {
    services.logger.warn({ ruleId: rule.id }, "alert rule has an invalid condition; skipped");
    return { fired: [] as Transition[], resolved: [] as Transition[], notifications: 0, names: new Map<string, string>() };
  }
  const condition: Condition = parsed.data;
  const scope = { organizationId: rule.organizationId, labelSelector: (rule.labelSelector ?? {}) as Record<string, string> };
  const matches = await conditionMatches(services.prisma, scope, condition, now);
  const ids = matches.map((m) => m.deviceId);
  const values = matches.map((m) => m.value);
  const at = now.toISOString();
  const cooldownEnds = new Date(now.getTime() - rule.cooldownSeconds * 1000);
  const summary = summarize(condition);
  const targets = rule.targets.map((t) => t.target).filter((t) => t.enabled);

  return services.prisma.$transaction(async (tx) => {
    const fired = await tx.$queryRaw<Transition[]>`
      INSERT INTO "AlertState" ("ruleId", "deviceId", "organizationId", "state", "value", "firingSince", "updatedAt")
      SELECT ${rule.id}::uuid, m."deviceId", ${rule.organizationId}::uuid, 'firing', m."value", ${at}::timestamptz, ${at}::timestamptz
        FROM unnest(${ids}::uuid[], ${values}::float8[]) AS m("deviceId", "value")
      ON CONFLICT ("ruleId", "deviceId") DO UPDATE
        SET "state" = 'firing', "value" = excluded."value", "firingSince" = excluded."firingSince", "resolvedAt" = NULL, "updatedAt" = excluded."updatedAt",
            "acknowledgedAt" = NULL, "acknowledgedBy" = NULL, "resolvedBy" = NULL
        WHERE "AlertState"."state" <> 'firing'
      RETURNING "deviceId", "value", "firingSince", "lastNotifiedAt"`;
    const resolved = await tx.$queryRaw<Transition[]>`
      UPDATE "AlertState" SET "state" = 'resolved', "resolvedAt" = ${at}::timestamptz, "updatedAt" = ${at}::timestamptz
       WHERE "ruleId" = ${rule.id}::uuid AND "state" = 'firing' AND NOT ("deviceId" = ANY(${ids}::uuid[]))
      RETURNING "deviceId", "value", "firingSince", "lastNotifiedAt"`;
    // Firing is notified unless the device was notified for this rule within the cooldown;
    // resolution is notified when the firing it ends was.
    const notifyFired = fired.filter((f) => !f.lastNotifiedAt || new Date(f.lastNotifiedAt) <= cooldownEnds);
    const notifyResolved = resolved.filter((r) => r.lastNotifiedAt && new Date(r.lastNotifiedAt) >= new Date(r.firingSince));
    await tx.alertRule.update({ where: { id: rule.id }, data: { lastEvaluatedAt: now } });

    const changed = [...fired, ...resolved].map((t) => t.deviceId);
    const names = new Map(
      changed.length === 0 ? [] : (await tx.device.findMany({ where: { id: { in: changed } }, select: { id: true, name: true } })).map((d) => [d.id, d.name]),
    );
    let notifications = 0;
    if (targets.length > 0) {
      for (const [event, group] of [["firing", notifyFired], ["resolved", notifyResolved]] as const) {
        if (group.length === 0) continue;
        const devices = group.map((g) => ({ id: g.deviceId, name: names.get(g.deviceId) ?? null, value: g.value == null ? null : Number(g.value) }));
        await enqueueNotification(tx, services.config, {
          organizationId: rule.organizationId,
          ruleId: rule.id,
          event,
          rule: { id: rule.id, name: rule.name, severity: rule.severity, summary, condition },
          devices,
          deviceCount: devices.length,
          message: describe(rule, summary, event, devices),
          targets,
        });
        notifications += targets.length;
      }
      if (notifyFired.length > 0) {
        await tx.$executeRaw`UPDATE "AlertState" SET "lastNotifiedAt" = ${at}::timestamptz
          WHERE "ruleId" = ${rule.id}::uuid AND "deviceId" = ANY(${notifyFired.map((f) => f.deviceId)}::uuid[])`;
      }
    }
    return { fired, resolved, notifications, names };
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
        deviceId: t.deviceId,
        deviceName: outcome.names.get(t.deviceId) ?? null,
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
