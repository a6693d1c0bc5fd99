// How an enrolling device is admitted, by its enrollment token's mode and the pre-authorized
// list (docs/admission.md):
// * a listed id whose entry names another key is refused in every mode (a conflict, kept in the
//   lobby for the operator to see, never admitted);
// * `auto` admits at once (with the entry's labels when the id is listed);
// * `preauthorized` admits listed ids only (the key must match when the entry names one);
// * `approval` puts the device in the lobby, unless a listed entry's key matches: a key the
//   device proved it holds (its CSR is signed with it) is something the service verified,
//   whereas an id alone is only what the device says of itself and never approves by itself;
// * a device with a verified TPM (its EK hash, ../tpm-ek-cas/attestation.ts) is matched by its id
//   or, failing that, by its EK hash; an entry naming an EK hash admits only that TPM (another
//   TPM, or none, is a conflict), and a verified EK hash approves like a verified key.
import type { DbTx } from "../../db/client.js";
import type { EnrollmentToken, PreauthorizedDevice } from "../../generated/prisma/client.js";
import type { RequestInfo } from "../../trpc/context.js";
import { writeAudit } from "../../trpc/audit.js";
import { labelsOf, type Labels } from "../devices/labels.js";
import type { Facts } from "../agent/schemas.js";

export interface RequestRecord {
  organizationId: string;
  token: Pick<EnrollmentToken, "id" | "name">;
  deviceId: string;
  reportedDeviceId: string;
  name: string;
  facts: Facts;
  requestedLabels: Labels;
  sourceAddress: string | null;
  keyFingerprint: string;
  /** the verified TPM evidence (fleet-agent enroll --tpm), null for a software key */
  attestation: object | null;
}

export type ConflictRecord = Omit<RequestRecord, "deviceId"> & { reason: string };

type Recorder = (db: DbTx, record: RequestRecord) => Promise<string | null>;

export type Admission =
  | { kind: "conflict"; message: string }
  | { kind: "unlisted"; message: string }
  | { kind: "admitted"; labels: Labels; preauthorizedId: string | null; record: Recorder }
  | { kind: "pending"; record: Recorder };

const short = (hash: string) => `sha256:${hash.slice(0, 16)}...`;

export async function admissionOf(db: DbTx, token: EnrollmentToken, reportedDeviceId: string, keyFingerprint: string, ekHash: string | null = null): Promise<Admission> {
  const byId = await db.preauthorizedDevice.findUnique({ where: { organizationId_reportedDeviceId: { organizationId: token.organizationId, reportedDeviceId } } });
  const entry = byId ?? (ekHash ? await db.preauthorizedDevice.findFirst({ where: { organizationId: token.organizationId, ekHash }, orderBy: { createdAt: "asc" } }) : null);
  if (entry?.keyFingerprint && entry.keyFingerprint !== keyFingerprint) {
    return {
      kind: "conflict",
      message: `Device id "${reportedDeviceId}" is pre-authorized with another key (sha256:${entry.keyFingerprint.slice(0, 16)}..., this device's is sha256:${keyFingerprint.slice(0, 16)}...); it is not admitted`,
    };
  }
  if (entry?.ekHash && entry.ekHash !== ekHash) {
    return {
      kind: "conflict",
      message: ekHash
        ? `Device id "${reportedDeviceId}" is pre-authorized with another TPM (endorsement key ${short(entry.ekHash)}, this device's is ${short(ekHash)}); it is not admitted`
        : `Device id "${reportedDeviceId}" is pre-authorized with a TPM (endorsement key ${short(entry.ekHash)}), and this device enrolled without TPM evidence (fleet-agent enroll --tpm); it is not admitted`,
    };
  }
  const verified = entry && (entry.keyFingerprint !== null || entry.ekHash !== null || token.mode !== "approval");
  if (entry && verified) return { kind: "admitted", labels: labelsOf(entry.labels), preauthorizedId: entry.id, record: preauthorizedRecorder(token, entry) };
  if (token.mode === "preauthorized") {
    const what = ekHash ? `Device id "${reportedDeviceId}" and its TPM's endorsement key ${short(ekHash)} are` : `Device id "${reportedDeviceId}" is`;
    return { kind: "unlisted", message: `${what} not on the organization's pre-authorized list, and enrollment token "${token.name}" admits only pre-authorized devices` };
  }
  if (token.mode === "approval") return { kind: "pending", record: (tx, r) => createRequest(tx, r, "pending") };
  return { kind: "admitted", labels: {}, preauthorizedId: null, record: async () => null };
}

function preauthorizedRecorder(token: EnrollmentToken, entry: PreauthorizedDevice): Recorder {
  return async (db, record) => {
    await db.preauthorizedDevice.update({ where: { id: entry.id }, data: { deviceId: record.deviceId, usedAt: new Date() } });
    // A token that admits at once keeps no request (as before); the others show the automatic decision.
    return token.mode === "auto" ? null : createRequest(db, record, "approved", "pre-authorized");
  };
}

async function createRequest(db: DbTx, record: RequestRecord | ConflictRecord, state: "pending" | "approved" | "conflict", reason?: string): Promise<string> {
  const decided = state !== "pending";
  const row = await db.enrollmentRequest.create({
    data: {
      organizationId: record.organizationId,
      deviceId: "deviceId" in record ? record.deviceId : null,
      enrollmentTokenId: record.token.id,
      tokenName: record.token.name,
      reportedDeviceId: record.reportedDeviceId,
      name: record.name,
      facts: record.facts as object,
      requestedLabels: record.requestedLabels,
      sourceAddress: record.sourceAddress,
      keyFingerprint: record.keyFingerprint,
      attestation: record.attestation ?? undefined,
      state,
      reason: reason ?? ("reason" in record ? record.reason : null),
      decidedByType: decided ? "system" : null,
      decidedAt: decided ? new Date() : null,
    },
    select: { id: true },
  });
  return row.id;
}

/** A refused conflict, recorded after the enrollment's transaction rolled back, with its audit entry. */
export async function recordConflict(db: DbTx, request: RequestInfo, record: ConflictRecord) {
  const id = await createRequest(db, record, "conflict");
  await writeAudit(db, request, null, {
    action: "enrollment-requests.conflict",
    outcome: "denied",
    organizationId: record.organizationId,
    entityType: "enrollment_request",
    entityId: id,
    message: record.reason,
    actor: { type: "system", id: null },
  });
}
