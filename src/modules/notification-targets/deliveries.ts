// Notification deliveries: one row per (notification, target), sent by a job of the job
// runner ("notification.deliver"). The runner retries failed attempts with exponential
// back-off; every attempt is recorded here with its status code, duration and error, and the
// delivery ends delivered or failed. A delivery is created in the same transaction as the
// alert state change (or test request) that caused it, and so is its job.
import crypto from "node:crypto";
import type { DbTx } from "../../db/client.js";
import type { Services } from "../../services.js";
import type { Config } from "../../config.js";
import { enqueueJob } from "../../jobs/queue.js";
import { PermanentJobError, type JobDefinition } from "../../jobs/types.js";
import { send, SendFailure, type NotificationPayload, type NotificationSubject } from "./senders.js";

export const DELIVER_JOB = "notification.deliver";
const MAX_BACKOFF_MS = 3_600_000;
/** Devices listed by name in one notification; deviceCount tells how many there were. */
export const MAX_LISTED_DEVICES = 100;

export interface NotificationRequest {
  organizationId: string;
  /** null for a target's own test notification */
  ruleId: string | null;
  event: "firing" | "resolved" | "test";
  rule: NotificationPayload["rule"];
  devices: NotificationPayload["devices"];
  deviceCount: number;
  /** config source rules name their sources here (devices: the devices, by default) */
  subjectType?: NotificationPayload["subjectType"];
  subjects?: NotificationSubject[];
  subjectCount?: number;
  message: string;
  targets: Array<{ id: string; name: string; type: string }>;
}

/** Creates the deliveries of one notification and their jobs; answers the delivery ids. */
export async function enqueueNotification(db: DbTx, config: Pick<Config, "NOTIFICATION_MAX_ATTEMPTS">, request: NotificationRequest): Promise<string[]> {
  const createdAt = new Date().toISOString();
  const subjectType = request.subjectType ?? "device";
  const subjects = request.subjects ?? request.devices.map((d): NotificationSubject => ({ type: "device", ...d }));
  const subjectCount = request.subjectCount ?? request.deviceCount;
  const rows = request.targets.map((target) => {
    const id = crypto.randomUUID();
    const payload: NotificationPayload = {
      event: `alert.${request.event}`,
      deliveryId: id,
      organizationId: request.organizationId,
      createdAt,
      rule: request.rule,
      devices: request.devices.slice(0, MAX_LISTED_DEVICES),
      deviceCount: request.deviceCount,
      subjectType,
      subjects: subjects.slice(0, MAX_LISTED_DEVICES),
      subjectCount,
      message: request.message,
    };
    return {
      id,
      organizationId: request.organizationId,
      ruleId: request.ruleId,
      targetId: target.id,
      targetName: target.name,
      targetType: target.type,
      deviceId: request.deviceCount === 1 ? request.devices[0]?.id ?? null : null,
      configSourceId: subjectType === "config_source" && subjectCount === 1 ? subjects[0]?.id ?? null : null,
      event: request.event,
      payload: payload as object,
      maxAttempts: config.NOTIFICATION_MAX_ATTEMPTS,
    };
  });
  if (rows.length === 0) return [];
  await db.notificationDelivery.createMany({ data: rows });
  for (const row of rows) {
    await enqueueJob(db, { type: DELIVER_JOB, payload: { deliveryId: row.id }, uniqueKey: `${DELIVER_JOB}:${row.id}`, maxAttempts: row.maxAttempts + 1 });
  }
  return rows.map((r) => r.id);
}

/**
 * A page of deliveries, newest first, each with every attempt (one query for the page's
 * attempts). `where` picks a rule's or a target's history.
 */
export async function listDeliveryPage(
  db: DbTx,
  where: { organizationId: string; ruleId?: string; targetId?: string; status?: string },
  page: { limit: number; offset: number },
) {
  const filter = {
    organizationId: where.organizationId,
    ...(where.ruleId ? { ruleId: where.ruleId } : {}),
    ...(where.targetId ? { targetId: where.targetId } : {}),
    ...(where.status ? { status: where.status } : {}),
  };
  const [rows, total] = await Promise.all([
    db.notificationDelivery.findMany({
      where: filter,
      include: { attemptsList: { orderBy: { attempt: "asc" } } },
      orderBy: [{ createdAt: "desc" }, { id: "asc" }],
      take: page.limit,
      skip: page.offset,
    }),
    db.notificationDelivery.count({ where: filter }),
  ]);
  const iso = (d: Date | null) => d?.toISOString() ?? null;
  return {
    items: rows.map((d) => ({
      id: d.id,
      ruleId: d.ruleId,
      targetId: d.targetId,
      targetName: d.targetName,
      targetType: d.targetType,
      deviceId: d.deviceId,
      configSourceId: d.configSourceId,
      event: d.event as "firing" | "resolved" | "test",
      status: d.status as "pending" | "delivering" | "delivered" | "failed",
      attempts: d.attempts,
      maxAttempts: d.maxAttempts,
      nextAttemptAt: iso(d.nextAttemptAt),
      lastStatusCode: d.lastStatusCode,
      lastError: d.lastError,
      deliveredAt: iso(d.deliveredAt),
      createdAt: d.createdAt.toISOString(),
      payload: d.payload as Record<string, unknown>,
      attemptLog: d.attemptsList.map((a) => ({
        attempt: a.attempt, startedAt: a.startedAt.toISOString(), durationMs: a.durationMs, statusCode: a.statusCode, error: a.error, success: a.success,
      })),
    })),
    total,
    hasMore: page.offset + rows.length < total,
  };
}

async function finish(services: Services, id: string, status: "delivered" | "failed", error: string | null, statusCode: number | null) {
  await services.prisma.notificationDelivery.update({
    where: { id },
    data: { status, lastError: error, lastStatusCode: statusCode, nextAttemptAt: null, deliveredAt: status === "delivered" ? new Date() : null },
  });
}

/** One attempt of one delivery. Throws to have the runner retry it after its back-off. */
export async function attemptDelivery(services: Services, deliveryId: string, signal: AbortSignal): Promise<void> {
  const { prisma, config } = services;
  const delivery = await prisma.notificationDelivery.findUnique({ where: { id: deliveryId }, include: { target: true } });
  if (!delivery || delivery.status === "delivered" || delivery.status === "failed") return; // already settled (or deleted with its rule)
  const target = delivery.target;
  if (!target || !target.enabled) {
    await finish(services, deliveryId, "failed", target ? "the target is disabled" : "the target was deleted", null);
    return;
  }
  // The attempt number is the delivery's own counter: exact even if a crashed worker's job is taken over.
  const { attempts } = await prisma.notificationDelivery.update({
    where: { id: deliveryId },
    data: { status: "delivering", attempts: { increment: 1 } },
    select: { attempts: true },
  });
  const startedAt = new Date();
  const started = performance.now();
  let statusCode: number | null = null;
  let error: SendFailure | null = null;
  try {
    const deadline = AbortSignal.any([signal, AbortSignal.timeout(config.NOTIFICATION_TIMEOUT_SECONDS * 1000)]);
    ({ statusCode } = await send(
      config,
      {
        type: target.type,
        url: target.url ? services.secrets.decrypt(target.url) : null,
        secret: target.secretEncrypted ? services.secrets.decrypt(target.secretEncrypted) : null,
        recipients: target.recipients,
      },
      delivery.payload as unknown as NotificationPayload,
      attempts,
      deadline,
    ));
  } catch (err) {
    error = err instanceof SendFailure ? err : new SendFailure((err as Error).message, null);
    statusCode = error.statusCode;
  }
  const durationMs = Math.round(performance.now() - started);
  await prisma.notificationAttempt.create({
    data: { deliveryId, attempt: attempts, startedAt, durationMs, statusCode, error: error?.message.slice(0, 1000) ?? null, success: !error },
  });
  if (!error) return finish(services, deliveryId, "delivered", null, statusCode);

  const lastTry = error.permanent || attempts >= delivery.maxAttempts;
  if (lastTry) {
    await finish(services, deliveryId, "failed", error.message.slice(0, 1000), statusCode);
    throw new PermanentJobError(error.message);
  }
  const upperBound = Math.min(MAX_BACKOFF_MS, config.NOTIFICATION_RETRY_BASE_MS * 2 ** (attempts - 1));
  await prisma.notificationDelivery.update({
    where: { id: deliveryId },
    data: { status: "pending", lastError: error.message.slice(0, 1000), lastStatusCode: statusCode, nextAttemptAt: new Date(Date.now() + upperBound) },
  });
  throw error;
}

export function deliveryJob(config: Config): JobDefinition<{ deliveryId: string }> {
  return {
    type: DELIVER_JOB,
    // The delivery's own counter decides when to stop; the runner's limit is a backstop.
    maxAttempts: config.NOTIFICATION_MAX_ATTEMPTS + 1,
    timeoutMs: config.NOTIFICATION_TIMEOUT_SECONDS * 1000 + 10_000,
    backoff: { baseMs: config.NOTIFICATION_RETRY_BASE_MS, maxMs: MAX_BACKOFF_MS },
    run: ({ services, job, signal }) => attemptDelivery(services, job.payload.deliveryId, signal),
  };
}
