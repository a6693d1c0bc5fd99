// Device actions: created by an operator, handed to the device with the heartbeat's answer,
// reported back by the agent, expired when the device did not take them in time.
//
// At most once: the service hands an action over while it is open (pending, delivered,
// deferred), and the agent keeps the id of every action it took in its state directory
// before it runs it, so a heartbeat answer that came twice (a retry, a reconnection) or an
// action handed over again runs nothing again (agent/src/actions/). The service's own states
// only move forward: a final state (succeeded, failed, expired, cancelled) never changes.
import { TRPCError } from "@trpc/server";
import type { DbTx } from "../../db/client.js";
import type { RawDatabase } from "../../db/adapters.js";
import type { Principal } from "../../trpc/principal.js";
import { APP_KINDS, FINAL_STATES, type ActionKind, type ActionState } from "./kinds.js";
import type { ActionDto, ActionReport, DeviceActionEntry } from "./schemas.js";

const UTC_NOW = `(now() AT TIME ZONE 'UTC')`;
const ISO = (column: string) => `to_char(${column}, 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

export interface CreateAction {
  deviceId: string;
  kind: ActionKind;
  deploymentId?: string;
  reason?: string;
  expiresInSeconds: number;
}

const withRelations = {
  device: { select: { name: true } },
  bundle: { select: { sizeBytes: true, sha256: true, expiresAt: true } },
} as const;

type ActionRow = NonNullable<Awaited<ReturnType<typeof findRow>>>;

function findRow(db: DbTx, organizationId: string, id: string) {
  return db.deviceAction.findFirst({ where: { id, organizationId }, include: withRelations });
}

const iso = (d: Date | null) => (d ? d.toISOString() : null);

export function toActionDto(row: ActionRow): ActionDto {
  return {
    id: row.id,
    deviceId: row.deviceId,
    deviceName: row.device.name,
    kind: row.kind as ActionKind,
    deploymentId: row.deploymentId,
    applicationId: row.applicationId,
    configLayerId: row.configLayerId,
    configRevision: row.configRevision,
    reason: row.reason,
    state: row.state as ActionState,
    message: row.message,
    result: row.result ?? null,
    expiresAt: row.expiresAt.toISOString(),
    deliveredAt: iso(row.deliveredAt),
    startedAt: iso(row.startedAt),
    finishedAt: iso(row.finishedAt),
    deferredUntil: iso(row.deferredUntil),
    deferredBy: row.deferredBy,
    createdById: row.createdById,
    jobId: row.jobId,
    batchIndex: row.batchIndex,
    heldForBudget: row.heldForBudget,
    windowOpensAt: iso(row.windowOpensAt),
    createdAt: row.createdAt.toISOString(),
    // an expired bundle is no longer offered (the sweep deletes it)
    bundle: row.bundle && row.bundle.expiresAt > new Date()
      ? { sizeBytes: row.bundle.sizeBytes, sha256: row.bundle.sha256, expiresAt: row.bundle.expiresAt.toISOString() }
      : null,
  };
}

const badRequest = (message: string) => new TRPCError({ code: "BAD_REQUEST", message });

export async function createAction(db: DbTx, principal: Principal, input: CreateAction): Promise<ActionDto> {
  const { organizationId } = principal;
  const device = await db.device.findFirst({ where: { id: input.deviceId, organizationId }, select: { id: true } });
  if (!device) throw new TRPCError({ code: "NOT_FOUND", message: "Device not found" });
  let applicationId: string | null = null;
  if (APP_KINDS.includes(input.kind)) {
    if (!input.deploymentId) throw badRequest(`deploymentId: ${input.kind} names the deployment whose application it acts on`);
    const entry = await db.deploymentDevice.findFirst({
      where: { deploymentId: input.deploymentId, deviceId: device.id, organizationId, desiredAction: "install" },
      select: { deployment: { select: { applicationId: true } } },
    });
    if (!entry) throw badRequest("deploymentId: the device is not told to run this deployment");
    applicationId = entry.deployment.applicationId;
  } else if (input.deploymentId) {
    throw badRequest(`deploymentId: ${input.kind} acts on the whole device and names no deployment`);
  }
  const created = await db.deviceAction.create({
    data: {
      organizationId,
      deviceId: device.id,
      kind: input.kind,
      deploymentId: input.deploymentId ?? null,
      applicationId,
      reason: input.reason ?? null,
      expiresAt: new Date(Date.now() + input.expiresInSeconds * 1000),
      createdById: principal.apiKeyId ?? principal.userId,
    },
    include: withRelations,
  });
  return toActionDto(created);
}

export async function getAction(db: DbTx, organizationId: string, id: string): Promise<ActionDto> {
  const row = await findRow(db, organizationId, id);
  if (!row) throw new TRPCError({ code: "NOT_FOUND", message: "Device action not found" });
  return toActionDto(row);
}

export async function listActions(
  db: DbTx,
  organizationId: string,
  filter: { deviceId?: string; jobId?: string; state?: ActionState[]; kind?: ActionKind[]; limit: number; offset: number },
): Promise<{ rows: ActionDto[]; total: number }> {
  const where = {
    organizationId,
    ...(filter.deviceId ? { deviceId: filter.deviceId } : {}),
    ...(filter.jobId ? { jobId: filter.jobId } : {}),
    ...(filter.state?.length ? { state: { in: filter.state } } : {}),
    ...(filter.kind?.length ? { kind: { in: filter.kind } } : {}),
  };
  const [rows, total] = await Promise.all([
    db.deviceAction.findMany({ where, include: withRelations, orderBy: [{ createdAt: "desc" }, { id: "desc" }], take: filter.limit, skip: filter.offset }),
    db.deviceAction.count({ where }),
  ]);
  return { rows: rows.map(toActionDto), total };
}

/** Only an action the device has not begun: pending (not handed over yet) or deferred (held by a lease). */
export async function cancelAction(db: DbTx, organizationId: string, id: string): Promise<ActionDto> {
  // conditional update: of a cancel and a heartbeat handing it over, one wins
  const { count } = await db.deviceAction.updateMany({
    where: { id, organizationId, state: { in: ["pending", "deferred"] } },
    data: { state: "cancelled", finishedAt: new Date(), message: "cancelled by an operator" },
  });
  if (count === 0) {
    const row = await findRow(db, organizationId, id);
    if (!row) throw new TRPCError({ code: "NOT_FOUND", message: "Device action not found" });
    throw new TRPCError({ code: "CONFLICT", message: `Cannot cancel the action: it is ${row.state} (allowed while pending or deferred)` });
  }
  return getAction(db, organizationId, id);
}

/**
 * The open actions of a device, for its heartbeat's answer, in one statement: expired ones are
 * closed, pending ones become delivered, and every open one (delivered, deferred) is answered,
 * oldest first. The agent keeps what it took, so answering one again runs nothing twice.
 * `$2`: pending job actions outside their maintenance windows (jobs/windows.ts): they stay
 * pending, with the time their window opens, and are not handed over.
 */
export const OPEN_ACTIONS_STATEMENT = `
  WITH held AS (
    SELECT h."id", h."opensAt" AT TIME ZONE 'UTC' AS "opensAt" FROM jsonb_to_recordset($2::text::jsonb) AS h("id" uuid, "opensAt" timestamptz)
  ), expired AS (
    UPDATE "DeviceAction" SET "state" = 'expired', "finishedAt" = ${UTC_NOW}, "updatedAt" = ${UTC_NOW},
           "message" = COALESCE("message", CASE WHEN "state" = 'pending' AND "windowOpensAt" IS NOT NULL
                                                THEN 'expired while the device waited for its maintenance window' ELSE 'expired before the device ran it' END)
     WHERE "deviceId" = $1::uuid AND "state" IN ('pending', 'delivered', 'deferred') AND "expiresAt" <= ${UTC_NOW}
    RETURNING "id"
  ), waiting AS (
    UPDATE "DeviceAction" a SET "windowOpensAt" = h."opensAt", "updatedAt" = ${UTC_NOW}
      FROM held h
     WHERE a."id" = h."id" AND a."deviceId" = $1::uuid AND a."state" = 'pending' AND a."expiresAt" > ${UTC_NOW}
       AND a."windowOpensAt" IS DISTINCT FROM h."opensAt"
    RETURNING a."id"
  ), handed AS (
    UPDATE "DeviceAction" SET "state" = 'delivered', "deliveredAt" = ${UTC_NOW}, "updatedAt" = ${UTC_NOW}, "windowOpensAt" = NULL
     WHERE "deviceId" = $1::uuid AND "state" = 'pending' AND "expiresAt" > ${UTC_NOW} AND "id" NOT IN (SELECT "id" FROM held)
    RETURNING "id", "kind", "deploymentId", "applicationId", "expiresAt", "createdAt"
  ), open AS (
    SELECT "id", "kind", "deploymentId", "applicationId", "expiresAt", "createdAt" FROM handed
    UNION ALL
    SELECT "id", "kind", "deploymentId", "applicationId", "expiresAt", "createdAt" FROM "DeviceAction"
     WHERE "deviceId" = $1::uuid AND "state" IN ('delivered', 'deferred') AND "expiresAt" > ${UTC_NOW}
  )
  SELECT "id", "kind", "deploymentId", "applicationId", ${ISO(`"expiresAt"`)} AS "expiresAt"
    FROM open
   -- (the expired CTE runs whether or not it is read: PostgreSQL runs every data-modifying CTE)
   ORDER BY "createdAt", "id"`;

export async function openActionsOf(raw: RawDatabase, deviceId: string, held: ReadonlyArray<{ id: string; opensAt: string | null }> = []): Promise<DeviceActionEntry[]> {
  return raw.query<DeviceActionEntry>(OPEN_ACTIONS_STATEMENT, [deviceId, JSON.stringify(held)]);
}

/**
 * The device's reports, in one statement: only its own actions, only while not final, and
 * never back to an earlier state than the one stored (running is not deferred again).
 */
export const ACTION_REPORTS_STATEMENT = `
  UPDATE "DeviceAction" a SET
    "state" = r."state",
    "message" = COALESCE(r."message", a."message"),
    "result" = COALESCE(r."result", a."result"),
    "startedAt" = CASE WHEN r."state" IN ('running', 'succeeded', 'failed') THEN COALESCE(a."startedAt", ${UTC_NOW}) ELSE a."startedAt" END,
    "finishedAt" = CASE WHEN r."state" IN ('succeeded', 'failed', 'expired') THEN ${UTC_NOW} ELSE NULL END,
    "deferredUntil" = COALESCE(r."deferredUntil"::timestamptz AT TIME ZONE 'UTC', a."deferredUntil"),
    "deferredBy" = COALESCE(r."deferredBy", a."deferredBy"),
    "updatedAt" = ${UTC_NOW}
  FROM jsonb_to_recordset($2::text::jsonb) AS r("id" uuid, "state" text, "message" text, "result" jsonb, "deferredUntil" text, "deferredBy" text)
  WHERE a."id" = r."id" AND a."deviceId" = $1::uuid
    AND a."state" IN ('pending', 'delivered', 'deferred', 'running')
    AND NOT (a."state" = 'running' AND r."state" = 'deferred')
  RETURNING a."id", a."jobId", a."organizationId", a."state"`;

/** Stores the reports; returns the jobs whose devices' actions ended with them (to be judged now). */
export async function recordActionReports(raw: RawDatabase, deviceId: string, reports: ActionReport[]): Promise<Array<{ jobId: string; organizationId: string }>> {
  if (!reports.length) return [];
  const rows = reports.map((r) => ({
    id: r.id, state: r.state, message: r.message ?? null, result: r.result ?? null,
    deferredUntil: r.deferredUntil ?? null, deferredBy: r.deferredBy ?? null,
  }));
  const stored = await raw.query<{ jobId: string | null; organizationId: string; state: string }>(ACTION_REPORTS_STATEMENT, [deviceId, JSON.stringify(rows)]);
  const ended = stored.filter((r) => r.jobId && FINAL_STATES.includes(r.state as ActionState));
  return [...new Map(ended.map((r) => [r.jobId!, { jobId: r.jobId!, organizationId: r.organizationId }])).values()];
}

/** Closes open actions past their expiry (devices that never came back) and drops bundles past theirs; the job's sweep. */
export async function expireActions(db: DbTx): Promise<{ expired: number; bundles: number }> {
  const now = new Date();
  const expired = await db.deviceAction.updateMany({
    where: { state: { in: ["pending", "delivered", "deferred"] }, expiresAt: { lte: now } },
    data: { state: "expired", finishedAt: now, message: "expired before the device ran it" },
  });
  const bundles = await db.deviceActionBundle.deleteMany({ where: { expiresAt: { lte: now } } });
  return { expired: expired.count, bundles: bundles.count };
}
