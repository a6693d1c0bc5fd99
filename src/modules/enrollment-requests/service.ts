// The lobby's rules: list, read, approve and reject (one request, or every pending request whose
// requested labels match a selector), each decision in one set-based statement sequence inside
// the caller's transaction (docs/admission.md).
import type { DbTx } from "../../db/client.js";
import { Prisma } from "../../generated/prisma/client.js";
import { conflict, notFound } from "../../trpc/errors.js";
import type { Actor } from "../devices/activity.js";
import { MAX_LABELS_PER_DEVICE, type Labels } from "../devices/labels.js";
import { revokeCertificatesOfDevices } from "../devices/certificate-bridge.js";
import { UTC_NOW } from "../devices/sql.js";
import type { EnrollmentRequestState } from "./schemas.js";

export type RequestTarget = { id: string } | { labelSelector: Labels };

export async function listEnrollmentRequests(
  db: DbTx,
  organizationId: string,
  query: { state?: EnrollmentRequestState[]; labels?: Labels; limit: number; offset: number },
) {
  const where: Prisma.EnrollmentRequestWhereInput = {
    organizationId,
    ...(query.state?.length ? { state: { in: query.state } } : {}),
  };
  // requestedLabels @> selector (GIN): Prisma's JSON filter cannot say "contains" for objects.
  if (query.labels && Object.keys(query.labels).length) {
    const ids = await db.$queryRaw<{ id: string }[]>`
      SELECT "id" FROM "EnrollmentRequest" WHERE "organizationId" = ${organizationId}::uuid AND "requestedLabels" @> ${JSON.stringify(query.labels)}::jsonb`;
    where.id = { in: ids.map((r) => r.id) };
  }
  const [rows, total] = await Promise.all([
    db.enrollmentRequest.findMany({ where, orderBy: [{ createdAt: "desc" }, { id: "desc" }], take: query.limit, skip: query.offset }),
    db.enrollmentRequest.count({ where }),
  ]);
  return { rows, total };
}

export async function getEnrollmentRequest(db: DbTx, organizationId: string, id: string) {
  const row = await db.enrollmentRequest.findFirst({ where: { id, organizationId } });
  if (!row) throw notFound("Enrollment request");
  return row;
}

/** One request by id must exist and be pending (404 / 409); a selector decides what matches, maybe nothing. */
async function pickCondition(db: DbTx, organizationId: string, target: RequestTarget): Promise<Prisma.Sql> {
  if ("id" in target) {
    const row = await getEnrollmentRequest(db, organizationId, target.id);
    if (row.state !== "pending") throw conflict(`Enrollment request was already decided: ${row.state}${row.decidedAt ? ` on ${row.decidedAt.toISOString()}` : ""}`);
    return Prisma.sql`r."id" = ${target.id}::uuid`;
  }
  return Prisma.sql`r."requestedLabels" @> ${JSON.stringify(target.labelSelector)}::jsonb`;
}

export interface Decision {
  decided: number;
  skipped: number;
  requests: { id: string; deviceId: string | null }[];
}

/**
 * Admits the devices of the picked pending requests: their labels become what they asked for
 * plus `labels` (which win), the request is approved, the device's activity says so. Devices whose
 * labels together would exceed the limit stay pending (`skipped`).
 */
export async function approveRequests(db: DbTx, actor: Actor, organizationId: string, target: RequestTarget, labels: Labels): Promise<Decision> {
  const picked = await pickCondition(db, organizationId, target);
  const extra = JSON.stringify(labels);
  const rows = await db.$queryRaw<{ id: string; deviceId: string | null; approved: boolean }[]>`
    WITH picked AS (
      SELECT r."id", r."deviceId", r."requestedLabels" || ${extra}::jsonb AS "labels"
        FROM "EnrollmentRequest" r
       WHERE r."organizationId" = ${organizationId}::uuid AND r."state" = 'pending' AND ${picked}
       ORDER BY r."id"
         FOR UPDATE
    ), fitting AS (
      SELECT p.* FROM picked p WHERE (SELECT count(*) FROM jsonb_object_keys(p."labels")) <= ${MAX_LABELS_PER_DEVICE}
    ), admitted AS (
      UPDATE "Device" d SET "admission" = 'admitted', "labels" = f."labels", "updatedAt" = ${UTC_NOW}
        FROM fitting f
       WHERE d."id" = f."deviceId" AND d."organizationId" = ${organizationId}::uuid AND d."admission" = 'pending'
      RETURNING d."id", d."labels"
    ), decided AS (
      UPDATE "EnrollmentRequest" r
         SET "state" = 'approved', "approvalLabels" = ${extra}::jsonb, "decidedByType" = ${actor.type}, "decidedById" = ${actor.id},
             "decidedAt" = ${UTC_NOW}, "updatedAt" = ${UTC_NOW}
        FROM fitting f WHERE r."id" = f."id"
      RETURNING r."id"
    ), logged AS (
      INSERT INTO "DeviceEvent" ("organizationId", "deviceId", "type", "message", "data", "actorType", "actorId", "createdAt")
      SELECT ${organizationId}::uuid, a."id", 'approved', 'Approved in the enrollment lobby: the device is admitted',
             jsonb_build_object('labels', a."labels"), ${actor.type}, ${actor.id}, ${UTC_NOW}
        FROM admitted a
      RETURNING 1
    )
    SELECT p."id", p."deviceId", EXISTS (SELECT 1 FROM decided x WHERE x."id" = p."id") AS "approved"
      FROM picked p, (SELECT count(*) FROM logged) l`;
  const approved = rows.filter((r) => r.approved);
  return { decided: approved.length, skipped: rows.length - approved.length, requests: approved.map(({ id, deviceId }) => ({ id, deviceId })) };
}

/**
 * Refuses the devices of the picked pending requests: their certificates are revoked and the
 * devices deleted (decommissioned: the agent is told so on its next contact, docs/admission.md);
 * the requests stay, rejected, with the reason.
 */
export async function rejectRequests(db: DbTx, actor: Actor, organizationId: string, target: RequestTarget, reason: string | undefined): Promise<Decision> {
  const picked = await pickCondition(db, organizationId, target);
  const rows = await db.$queryRaw<{ id: string; deviceId: string | null }[]>`
    UPDATE "EnrollmentRequest" r
       SET "state" = 'rejected', "reason" = ${reason ?? null}, "decidedByType" = ${actor.type}, "decidedById" = ${actor.id},
           "decidedAt" = ${UTC_NOW}, "updatedAt" = ${UTC_NOW}
     WHERE r."organizationId" = ${organizationId}::uuid AND r."state" = 'pending' AND ${picked}
    RETURNING r."id", r."deviceId"`;
  const deviceIds = rows.flatMap((r) => (r.deviceId ? [r.deviceId] : []));
  await revokeCertificatesOfDevices(db, organizationId, deviceIds);
  if (deviceIds.length) {
    await db.device.deleteMany({ where: { organizationId, admission: "pending", id: { in: deviceIds } } });
  }
  return { decided: rows.length, skipped: 0, requests: rows };
}
