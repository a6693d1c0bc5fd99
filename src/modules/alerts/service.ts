// Alert rules of an organization: CRUD, the delivery history and the test notification.
// Evaluation lives in evaluate.ts.
import type { DbTx } from "../../db/client.js";
import type { Config } from "../../config.js";
import { badRequest, conflict, notFound } from "../../trpc/errors.js";
import { withUniqueName } from "./unique-name.js";
import { enqueueNotification, listDeliveryPage } from "../notification-targets/deliveries.js";
import { subjectTypeOf, summarize, type Condition } from "./conditions.js";
import { toRuleDto, type CreateRuleInput, type Severity, type UpdateRuleInput } from "./schemas.js";

const withTargets = { targets: { select: { targetId: true } } } as const;

async function assertTargets(db: DbTx, organizationId: string, ids: string[]) {
  const unique = [...new Set(ids)];
  if (unique.length === 0) return unique;
  const found = await db.notificationTarget.findMany({ where: { organizationId, id: { in: unique } }, select: { id: true } });
  const known = new Set(found.map((t) => t.id));
  const unknown = unique.filter((id) => !known.has(id));
  if (unknown.length > 0) throw badRequest(`Invalid input: targetIds: unknown notification target ${unknown.join(", ")}`);
  return unique;
}

/**
 * What create and update check beyond the schema: a config_source_failing rule has no label
 * selector (sources have no labels) and names existing config sources.
 */
async function assertScope(db: DbTx, organizationId: string, condition: Condition, labelSelector: unknown) {
  if (condition.type !== "config_source_failing") return;
  if (Object.keys((labelSelector ?? {}) as object).length > 0) {
    throw badRequest("Invalid input: labelSelector: does not apply to config_source_failing (config sources have no labels); send {}");
  }
  const names = [...new Set(condition.sourceNames)];
  if (names.length === 0) return;
  const found = new Set((await db.configSource.findMany({ where: { organizationId, name: { in: names } }, select: { name: true } })).map((r) => r.name));
  const unknown = names.filter((n) => !found.has(n));
  if (unknown.length > 0) throw badRequest(`Invalid input: condition.sourceNames: unknown config source ${unknown.join(", ")}`);
}

async function firingCounts(db: DbTx, ruleIds: string[]): Promise<Map<string, number>> {
  if (ruleIds.length === 0) return new Map();
  const rows = await db.alertState.groupBy({ by: ["ruleId"], where: { ruleId: { in: ruleIds }, state: "firing" }, _count: { _all: true } });
  return new Map(rows.map((r) => [r.ruleId, r._count._all]));
}

async function findRule(db: DbTx, organizationId: string, id: string) {
  const rule = await db.alertRule.findFirst({ where: { id, organizationId }, include: withTargets });
  if (!rule) throw notFound("Alert rule");
  return rule;
}

export async function getRule(db: DbTx, organizationId: string, id: string) {
  const rule = await findRule(db, organizationId, id);
  return toRuleDto(rule, (await firingCounts(db, [rule.id])).get(rule.id) ?? 0);
}

export async function listRules(db: DbTx, organizationId: string, input: { enabled?: boolean; severity?: Severity; limit: number; offset: number }) {
  const where = { organizationId, ...(input.enabled !== undefined ? { enabled: input.enabled } : {}), ...(input.severity ? { severity: input.severity } : {}) };
  const [rows, total] = await Promise.all([
    db.alertRule.findMany({ where, include: withTargets, orderBy: [{ createdAt: "desc" }, { id: "asc" }], take: input.limit, skip: input.offset }),
    db.alertRule.count({ where }),
  ]);
  const counts = await firingCounts(db, rows.map((r) => r.id));
  return { items: rows.map((r) => toRuleDto(r, counts.get(r.id) ?? 0)), total, hasMore: input.offset + rows.length < total };
}

export async function createRule(db: DbTx, organizationId: string, input: CreateRuleInput) {
  await assertScope(db, organizationId, input.condition, input.labelSelector);
  const targetIds = await assertTargets(db, organizationId, input.targetIds);
  const rule = await withUniqueName("rule", input.name, () => db.alertRule.create({
    data: {
      organizationId,
      name: input.name,
      description: input.description ?? null,
      conditionType: input.condition.type,
      condition: input.condition,
      labelSelector: input.labelSelector,
      severity: input.severity,
      cooldownSeconds: input.cooldownSeconds,
      enabled: input.enabled,
      targets: { create: targetIds.map((targetId) => ({ targetId })) },
    },
    include: withTargets,
  }));
  return toRuleDto(rule, 0);
}

/**
 * A changed condition or scope keeps the rule's states: the next evaluation resolves the
 * devices that no longer match (and notifies that) rather than forgetting them silently.
 */
export async function updateRule(db: DbTx, organizationId: string, input: UpdateRuleInput) {
  const current = await findRule(db, organizationId, input.id);
  await assertScope(db, organizationId, input.condition ?? (current.condition as Condition), input.labelSelector ?? current.labelSelector);
  const targetIds = input.targetIds ? await assertTargets(db, organizationId, input.targetIds) : undefined;
  if (targetIds) {
    await db.alertRuleTarget.deleteMany({ where: { ruleId: current.id } });
    await db.alertRuleTarget.createMany({ data: targetIds.map((targetId) => ({ ruleId: current.id, targetId })) });
  }
  const rule = await withUniqueName("rule", input.name, () => db.alertRule.update({
    where: { id: current.id },
    data: {
      name: input.name,
      description: input.description,
      ...(input.condition ? { condition: input.condition, conditionType: input.condition.type } : {}),
      labelSelector: input.labelSelector,
      severity: input.severity,
      cooldownSeconds: input.cooldownSeconds,
      enabled: input.enabled,
    },
    include: withTargets,
  }));
  return toRuleDto(rule, (await firingCounts(db, [rule.id])).get(rule.id) ?? 0);
}

/** Its states and delivery history go with it. */
export async function deleteRule(db: DbTx, organizationId: string, id: string) {
  const rule = await findRule(db, organizationId, id);
  await db.alertRule.delete({ where: { id: rule.id } });
  return { id: rule.id, deleted: true as const };
}

export async function listDeliveries(db: DbTx, organizationId: string, input: { id: string; status?: string; limit: number; offset: number }) {
  const rule = await findRule(db, organizationId, input.id);
  return listDeliveryPage(db, { organizationId, ruleId: rule.id, status: input.status }, input);
}

/** Sends a test notification to every enabled target of the rule, through the normal deliveries. */
export async function testRule(db: DbTx, config: Config, organizationId: string, id: string) {
  const rule = await db.alertRule.findFirst({
    where: { id, organizationId },
    include: { targets: { include: { target: { select: { id: true, name: true, type: true, enabled: true } } } } },
  });
  if (!rule) throw notFound("Alert rule");
  const targets = rule.targets.map((t) => t.target).filter((t) => t.enabled);
  if (targets.length === 0) throw conflict("The rule has no enabled notification target to test");
  const condition = rule.condition as Condition;
  const summary = summarize(condition);
  const ids = await enqueueNotification(db, config, {
    organizationId,
    ruleId: rule.id,
    event: "test",
    rule: { id: rule.id, name: rule.name, severity: rule.severity, summary, condition },
    devices: [],
    deviceCount: 0,
    subjectType: subjectTypeOf(condition.type),
    subjects: [],
    subjectCount: 0,
    message: `[${rule.severity}] ${rule.name}: test notification (${summary})`,
    targets,
  });
  return { deliveries: ids.map((deliveryId, i) => ({ id: deliveryId, targetId: targets[i].id, targetName: targets[i].name, targetType: targets[i].type, status: "pending" })) };
}
