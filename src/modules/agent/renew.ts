// POST /agent/certificate/renew: the device authenticates with its current certificate and
// sends a new CSR; it gets a new certificate from the organization's current default CA.
// The old certificate stays valid until it expires (a device that never received the answer
// can still retry); operators revoke through the device certificate operations.
import type { Services } from "../../services.js";
import type { RequestInfo } from "../../trpc/context.js";
import type { DevicePrincipal } from "../../trpc/device-auth.js";
import { writeAudit } from "../../trpc/audit.js";
import { renewDeviceCertificate } from "../devices/certificate-bridge.js";

export async function renewOwnCertificate(services: Services, request: RequestInfo, device: DevicePrincipal, csr: string) {
  return services.prisma.$transaction(async (tx) => {
    const record = await renewDeviceCertificate(tx, services.secrets, {
      organizationId: device.organizationId,
      deviceId: device.deviceId,
      certificateId: device.certificateId,
      csrPem: csr,
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
      changes: { deviceId: device.deviceId, renewedFromId: device.certificateId, notAfter: record.notAfter.toISOString() },
      actor: { type: "device", id: device.deviceId },
    });
    return {
      certificate: record.certificatePem,
      caChain: ca ? [ca.certificatePem, ...ca.chainPems] : [],
      certificateId: record.id,
      certificateNotAfter: record.notAfter.toISOString(),
    };
  });
}
