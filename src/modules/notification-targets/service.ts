// Notification targets of an organization. URLs (a Slack webhook URL is a credential) and
// webhook secrets are sealed at rest; reads show a masked URL and `hasSecret`. Every URL
// passes the outbound address policy when it is saved, and again, on the addresses it
// resolves to, each time a notification is sent.
import crypto from "node:crypto";
import type { DbTx } from "../../db/client.js";
import type { Config } from "../../config.js";
import type { Services } from "../../services.js";
import { assertUrlAllowed, OutboundRefused, outboundPolicyOf, resolveAllowed } from "../../lib/outbound.js";
import { badRequest, conflict, notFound } from "../../trpc/errors.js";
import { enqueueNotification, listDeliveryPage } from "./deliveries.js";
import { withUniqueName } from "../alerts/unique-name.js";
import { toTargetDto, type CreateTargetInput, type TargetRow, type TargetType, type UpdateTargetInput } from "./schemas.js";

type Deps = Pick<Services, "config" | "secrets">;

/**
 * Refuses URLs the outbound policy refuses: link-local and metadata always, private ranges when
 * configured. Called before the mutation's transaction opens (it may wait for DNS).
 */
export async function checkTargetUrl(services: Deps, raw: string): Promise<void> {
  const policy = outboundPolicyOf(services.config);
  try {
    const url = assertUrlAllowed(raw, policy);
    // Names are resolved now for early feedback; a name that does not resolve (yet, or within
    // two seconds) is accepted and checked again at every delivery.
    const timeout = new Promise<void>((resolve) => setTimeout(resolve, 2000).unref());
    await Promise.race([
      resolveAllowed(url.hostname, policy).then(() => undefined, (err: unknown) => {
        if (err instanceof OutboundRefused) throw err;
      }),
      timeout,
    ]);
  } catch (err) {
    if (err instanceof OutboundRefused) throw badRequest(`Invalid input: url: ${err.message}`);
    throw err;
  }
}

function assertEmailPossible(services: Deps) {
  if (!services.config.SMTP_URL) throw badRequest("E-mail targets need an SMTP server, and this installation has none configured (SMTP_URL)");
}

export const toDto = (services: Deps, row: TargetRow) => toTargetDto(row, (sealed) => services.secrets.decrypt(sealed));

/** `input.url` must have passed checkTargetUrl. */
export async function createTarget(db: DbTx, services: Deps, organizationId: string, input: CreateTargetInput) {
  if (input.type === "email") assertEmailPossible(services);
  // A webhook always signs: without a given secret one is generated and shown once.
  const generated = input.type === "webhook" && !input.secret ? crypto.randomBytes(32).toString("base64url") : undefined;
  const secret = input.secret ?? generated;
  const row = await withUniqueName("notification target", input.name, () => db.notificationTarget.create({
    data: {
      organizationId,
      name: input.name,
      type: input.type,
      url: input.url ? services.secrets.encrypt(input.url) : null,
      secretEncrypted: input.type === "webhook" && secret ? services.secrets.encrypt(secret) : null,
      recipients: input.type === "email" ? input.recipients ?? [] : [],
      enabled: input.enabled,
    },
  }));
  return { ...toDto(services, row), ...(generated ? { secret: generated } : {}) };
}

export async function findTarget(db: DbTx, organizationId: string, id: string): Promise<TargetRow> {
  const row = await db.notificationTarget.findFirst({ where: { id, organizationId } });
  if (!row) throw notFound("Notification target");
  return row;
}

export async function listTargets(db: DbTx, services: Deps, organizationId: string, input: { type?: TargetType; limit: number; offset: number }) {
  const where = { organizationId, ...(input.type ? { type: input.type } : {}) };
  const [rows, total] = await Promise.all([
    db.notificationTarget.findMany({ where, orderBy: [{ createdAt: "desc" }, { id: "asc" }], take: input.limit, skip: input.offset }),
    db.notificationTarget.count({ where }),
  ]);
  return { items: rows.map((r) => toDto(services, r)), total, hasMore: input.offset + rows.length < total };
}

/** `input.url`, when given, must have passed checkTargetUrl. */
export async function updateTarget(db: DbTx, services: Deps, organizationId: string, input: UpdateTargetInput) {
  const current = await findTarget(db, organizationId, input.id);
  const type = current.type as TargetType;
  if (input.url !== undefined) {
    if (type === "email") throw badRequest("Invalid input: url: an email target has no url");
  }
  if (input.recipients !== undefined && type !== "email") throw badRequest(`Invalid input: recipients: a ${type} target has no recipients`);
  if (input.secret !== undefined && type !== "webhook") throw badRequest(`Invalid input: secret: only webhook targets have a signing secret`);
  const row = await withUniqueName("notification target", input.name, () => db.notificationTarget.update({
    where: { id: current.id },
    data: {
      name: input.name,
      url: input.url !== undefined ? services.secrets.encrypt(input.url) : undefined,
      secretEncrypted: input.secret !== undefined ? services.secrets.encrypt(input.secret) : undefined,
      recipients: input.recipients,
      enabled: input.enabled,
    },
  }));
  return toDto(services, row);
}

/** Deliveries keep their history (target name and type); rules stop notifying the target. */
export async function deleteTarget(db: DbTx, organizationId: string, id: string) {
  const current = await findTarget(db, organizationId, id);
  await db.notificationTarget.delete({ where: { id: current.id } });
  return { id: current.id, deleted: true as const };
}

/** The target's delivery history (alerts and tests), newest first, with every attempt. */
export async function listTargetDeliveries(db: DbTx, organizationId: string, input: { id: string; status?: string; limit: number; offset: number }) {
  const target = await findTarget(db, organizationId, input.id);
  return listDeliveryPage(db, { organizationId, targetId: target.id, status: input.status }, input);
}

/** Queues one test notification to this target alone, through the normal deliveries. */
export async function testTarget(db: DbTx, config: Config, organizationId: string, id: string) {
  const target = await findTarget(db, organizationId, id);
  if (!target.enabled) throw conflict("The notification target is disabled; enable it to send a test");
  const summary = "test notification";
  const [deliveryId] = await enqueueNotification(db, config, {
    organizationId,
    ruleId: null,
    event: "test",
    rule: { id: null, name: `Test of ${target.name}`, severity: "info", summary, condition: null },
    devices: [],
    deviceCount: 0,
    message: `[info] Test notification to ${target.name}: if you read this, alerts reach this target`,
    targets: [target],
  });
  return { id: deliveryId, targetId: target.id, targetName: target.name, targetType: target.type, status: "pending" };
}
