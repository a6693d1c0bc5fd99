// POST /agent/certificate/renew: the device authenticates with its current certificate and
// sends a new CSR; it gets a new certificate from the organization's current default CA.
// The old certificate stays valid until it expires (a device that never received the answer
// can still retry); operators revoke through the device certificate operations.
// A device enrolled with a TPM-held key renews only with a new key attested by the same TPM
// (re-attested against the organization's trusted EK CAs of today: docs/admission.md).
import { TRPCError } from "@trpc/server";
import type { Services } from "../../services.js";
import type { DbTx } from "../../db/client.js";
import type { RequestInfo } from "../../trpc/context.js";
import type { DevicePrincipal } from "../../trpc/device-auth.js";
import { writeAudit } from "../../trpc/audit.js";
import { badRequest, forbidden } from "../../trpc/errors.js";
import { renewDeviceCertificate } from "../devices/certificate-bridge.js";
import { csrKeyFingerprint } from "../enrollment-requests/key-fingerprint.js";
import { verifyTpmEvidence, type TpmEvidence } from "../tpm-ek-cas/attestation.js";

export async function renewOwnCertificate(services: Services, request: RequestInfo, device: DevicePrincipal, input: { csr: string; tpm?: TpmEvidence }) {
  try {
    return await services.prisma.$transaction(async (tx) => {
      const attested = await reattest(services, tx, device, input);
      const record = await renewDeviceCertificate(tx, services.secrets, {
        organizationId: device.organizationId,
        deviceId: device.deviceId,
        certificateId: device.certificateId,
        csrPem: input.csr,
        supersede: false,
        validityDays: services.config.DEVICE_CERT_VALIDITY_DAYS,
      });
      const ca = record.caId ? await tx.caCertificate.findUnique({ where: { id: record.caId }, select: { certificatePem: true, chainPems: true } }) : null;
      await writeAudit(tx, request, null, {
        action: "agent.certificate.renew",
        outcome: "success",
        organizationId: device.organizationId,
        entityType: "device_certificate",
        entityId: record.id,
        changes: { deviceId: device.deviceId, renewedFromId: device.certificateId, notAfter: record.notAfter.toISOString(), ...(attested ? { attestation: "tpm", ekHash: attested } : {}) },
        actor: { type: "device", id: device.deviceId },
      });
      return {
        certificate: record.certificatePem,
        caChain: ca ? [ca.certificatePem, ...ca.chainPems] : [],
        certificateId: record.id,
        certificateNotAfter: record.notAfter.toISOString(),
      };
    });
  } catch (err) {
    if (err instanceof TRPCError && err.code === "FORBIDDEN") {
      await writeAudit(services.prisma, request, null, {
        action: "agent.certificate.renew",
        outcome: "denied",
        organizationId: device.organizationId,
        message: err.message,
        actor: { type: "device", id: device.deviceId },
      }).catch(() => undefined);
    }
    throw err;
  }
}

/** The EK hash the renewal was re-attested with, null for a device with a software key; 403 when the evidence fails. */
async function reattest(services: Services, tx: DbTx, device: DevicePrincipal, input: { csr: string; tpm?: TpmEvidence }): Promise<string | null> {
  const row = await tx.device.findUnique({ where: { id: device.deviceId }, select: { attestation: true, tpmEkHash: true } });
  if (row?.attestation !== "tpm") {
    if (input.tpm) throw badRequest("tpm: this device enrolled with a software key; enroll it again with fleet-agent enroll --tpm to attest it");
    return null;
  }
  if (!input.tpm) throw forbidden("This device's key is held by a TPM: a renewal must carry the new key's TPM evidence (tpm)");
  const keyFingerprint = csrKeyFingerprint(input.csr);
  if (!keyFingerprint) throw badRequest("csr: certificate request could not be parsed as PKCS#10");
  const verified = await verifyTpmEvidence(tx, services.jwtKey, device.organizationId, input.tpm, keyFingerprint);
  if (verified.ekHash !== row.tpmEkHash) throw forbidden("The renewal's key is attested by another TPM than the one this device enrolled with");
  return verified.ekHash;
}
