// POST /agent/enroll: enrollment token -> device (provisioned) + certificate, in one
// transaction. Refusals in order: bad token 401, organization not active 403, bad CSR 400,
// a pre-authorized id with another key 409 (recorded in the lobby as a conflict), an id not
// on the pre-authorized list of a `preauthorized` token 403, claimed reportedDeviceId 409, no
// usable default CA 409. With TPM evidence (fleet-agent enroll --tpm) it is verified right after
// the CSR (../tpm-ek-cas/attestation.ts): 403 naming what it fails to prove. Any refusal rolls everything back, the token use included.
// The token's mode decides the admission (docs/admission.md, admission.ts).
import { TRPCError } from "@trpc/server";
import type { Services } from "../../services.js";
import type { RequestInfo } from "../../trpc/context.js";
import { badRequest, conflict, forbidden, unauthorized } from "../../trpc/errors.js";
import { writeAudit } from "../../trpc/audit.js";
import { eventBusOf } from "../../lib/events.js";
import { recordDeviceEvent } from "../devices/activity.js";
import { labelsOf, MAX_LABELS_PER_DEVICE, type Labels } from "../devices/labels.js";
import { issueCertificateForDevice } from "../devices/certificate-bridge.js";
import { consumeEnrollmentToken } from "../enrollment-tokens/service.js";
import { splitFacts, type Facts } from "./schemas.js";
import { csrKeyFingerprint } from "../enrollment-requests/key-fingerprint.js";
import { admissionOf, recordConflict, type ConflictRecord } from "../enrollment-requests/admission.js";
import { verifyTpmEvidence, type TpmEvidence, type VerifiedTpm } from "../tpm-ek-cas/attestation.js";

const TOKEN_REFUSALS = {
  invalid: "Invalid enrollment token",
  expired: "Enrollment token has expired",
  exhausted: "Enrollment token has reached its maximum number of uses",
  revoked: "Enrollment token has been revoked",
} as const;

export interface EnrollRequest {
  enrollmentToken: string;
  reportedDeviceId: string;
  name?: string;
  csr: string;
  facts?: Facts;
  labels?: Labels;
  tpm?: TpmEvidence;
}

class Refused extends Error {
  constructor(readonly error: Error, readonly audit?: { organizationId: string; message: string }, readonly conflict?: ConflictRecord) {
    super(error.message);
  }
}

export async function enrollDevice(services: Services, request: RequestInfo, input: EnrollRequest) {
  const { named, rest } = splitFacts(input.facts);
  const now = new Date();
  let result;
  try {
    result = await services.prisma.$transaction(async (tx) => {
      const consumed = await consumeEnrollmentToken(tx, input.enrollmentToken);
      if (!consumed.ok) {
        const error = unauthorized(TOKEN_REFUSALS[consumed.reason]);
        throw new Refused(
          error,
          consumed.token && { organizationId: consumed.token.organizationId, message: `enrollment with token "${consumed.token.name}" refused: ${error.message}` },
        );
      }
      const token = consumed.token;
      const organizationId = token.organizationId;
      const org = await tx.organization.findUniqueOrThrow({ where: { id: organizationId }, select: { name: true, status: true } });
      if (org.status !== "active") {
        throw new Refused(forbidden(`Organization "${org.name}" is ${org.status}; it enrolls no devices until it is enabled again`), {
          organizationId,
          message: `enrollment refused: organization is ${org.status}`,
        });
      }

      const keyFingerprint = csrKeyFingerprint(input.csr);
      if (!keyFingerprint) throw new Refused(badRequest("csr: certificate request could not be parsed as PKCS#10"));
      let tpm: VerifiedTpm | null = null;
      if (input.tpm) {
        try {
          tpm = await verifyTpmEvidence(tx, services.jwtKey, organizationId, input.tpm, keyFingerprint);
        } catch (err) {
          if (!(err instanceof TRPCError)) throw err;
          throw new Refused(err, { organizationId, message: `enrollment of "${input.reportedDeviceId}" with a TPM refused: ${(err as Error).message}` });
        }
      }
      const attestation = tpm && { ekHash: tpm.ekHash, ekIssuer: tpm.ekIssuer, manufacturer: tpm.manufacturer, trustedCaId: tpm.trustedCaId, trustedCaName: tpm.trustedCaName };
      // the operator's token outranks what the device asks for
      const requested = { ...(input.labels ?? {}), ...labelsOf(token.labels) };
      const admission = await admissionOf(tx, token, input.reportedDeviceId, keyFingerprint, tpm?.ekHash ?? null);
      if (admission.kind === "conflict" || admission.kind === "unlisted") {
        throw new Refused(
          admission.kind === "conflict" ? conflict(admission.message) : forbidden(admission.message),
          { organizationId, message: `enrollment of "${input.reportedDeviceId}" refused: ${admission.message}` },
          admission.kind === "conflict"
            ? { organizationId, token, reportedDeviceId: input.reportedDeviceId, name: input.name ?? input.reportedDeviceId, facts: input.facts ?? {}, requestedLabels: requested, sourceAddress: request.sourceIp, keyFingerprint, attestation, reason: admission.message }
            : undefined,
        );
      }

      const holder = await tx.device.findFirst({ where: { organizationId, activeClaim: input.reportedDeviceId }, select: { id: true } });
      if (holder) {
        throw new Refused(
          conflict(`Reported device id "${input.reportedDeviceId}" is already claimed by device ${holder.id}; release that claim to enroll new hardware under it`),
          { organizationId, message: `enrollment of "${input.reportedDeviceId}" refused: already claimed by ${holder.id}` },
        );
      }
      // the factory's list outranks both
      const admittedLabels = { ...requested, ...(admission.kind === "admitted" ? admission.labels : {}) };
      if (Object.keys(admittedLabels).length > MAX_LABELS_PER_DEVICE) {
        throw new Refused(badRequest(`labels: the device's and the enrollment token's labels together are more than ${MAX_LABELS_PER_DEVICE}`));
      }
      // A device in the lobby carries no labels until approved: no label selector (deployments,
      // continuous ones included) matches it meanwhile; the request keeps what it asked for.
      const pending = admission.kind === "pending";
      const labels = pending ? {} : admittedLabels;
      // The unique index on (organizationId, activeClaim) settles a race between two
      // enrollments of the same id: the loser gets a unique violation, which is a 409.
      const device = await tx.device.create({
        data: {
          organizationId,
          name: input.name ?? input.reportedDeviceId,
          reportedDeviceId: input.reportedDeviceId,
          claimActive: true,
          activeClaim: input.reportedDeviceId,
          status: "provisioned",
          statusChangedAt: now,
          labels,
          os: named.os ?? null,
          arch: named.arch ?? null,
          agentVersion: named.agentVersion ?? null,
          hardwareModel: named.hardwareModel ?? null,
          ipAddress: named.ipAddress ?? request.sourceIp,
          facts: rest as object,
          enrolledAt: now,
          createdAt: now,
          enrollmentTokenId: token.id,
          admission: pending ? "pending" : "admitted",
          attestation: tpm ? "tpm" : null,
          tpmEkHash: tpm?.ekHash ?? null,
        },
      });
      const issued = await issueCertificateForDevice(tx, services.secrets, {
        organizationId,
        deviceId: device.id,
        csrPem: input.csr,
        validityDays: services.config.DEVICE_CERT_VALIDITY_DAYS,
      });
      const actor = { type: "device" as const, id: device.id };
      await recordDeviceEvent(tx, actor, {
        organizationId,
        deviceId: device.id,
        type: "enrolled",
        message: `Enrolled as "${device.name}" with enrollment token "${token.name}"` + (pending ? ", awaiting approval" : admission.kind === "admitted" && admission.preauthorizedId ? ", pre-authorized" : "") + (tpm ? `; key held by a TPM (EK sha256:${tpm.ekHash.slice(0, 16)}..., trusted CA "${tpm.trustedCaName}")` : ""),
        data: { reportedDeviceId: input.reportedDeviceId, enrollmentTokenId: token.id, labels, admission: device.admission },
      });
      const requestId = await admission.record(tx, {
        organizationId, token, deviceId: device.id, reportedDeviceId: input.reportedDeviceId, name: device.name, facts: input.facts ?? {},
        requestedLabels: requested, sourceAddress: request.sourceIp, keyFingerprint, attestation,
      });
      await writeAudit(tx, request, null, {
        action: "agent.enroll",
        outcome: "success",
        organizationId,
        entityType: "device",
        entityId: device.id,
        changes: { reportedDeviceId: input.reportedDeviceId, name: device.name, enrollmentTokenId: token.id, certificateId: issued.record.id, admission: device.admission, keyFingerprint, enrollmentRequestId: requestId, ...(tpm ? { attestation: "tpm", ekHash: tpm.ekHash, trustedEkCaId: tpm.trustedCaId } : {}) },
        actor,
      });
      return { device, issued };
    });
  } catch (err) {
    if (!(err instanceof Refused)) throw err;
    // The conflict is shown in the lobby although the enrollment was rolled back.
    if (err.conflict) await recordConflict(services.prisma, request, err.conflict).catch(() => undefined);
    if (err.audit?.organizationId) {
      await writeAudit(services.prisma, request, null, {
        action: "agent.enroll",
        outcome: "denied",
        organizationId: err.audit.organizationId,
        message: err.audit.message,
      }).catch(() => undefined);
    }
    throw err.error;
  }

  const { device, issued } = result;
  eventBusOf(services).publish("device.status_changed", {
    organizationId: device.organizationId,
    deviceId: device.id,
    from: null,
    to: "provisioned",
    at: now.toISOString(),
  });
  return {
    deviceId: device.id,
    certificate: issued.certificatePem,
    caChain: issued.caChainPems,
    certificateId: issued.record.id,
    certificateNotAfter: issued.record.notAfter.toISOString(),
    heartbeatIntervalSeconds: services.config.HEARTBEAT_INTERVAL_SECONDS,
    admission: device.admission as "admitted" | "pending",
    attestation: device.attestation === "tpm" ? ("tpm" as const) : null,
  };
}
