// What the device capability needs from the PKI capability (src/modules/devices/certificates/),
// in one place: issuing at enrollment, renewing for the agent, and revoking when devices are
// deleted. (Finding the certificate a device token names is device authentication's own
// lookup: src/trpc/device-auth.ts.)
import type { DbTx } from "../../db/client.js";
import { UTC_NOW } from "./sql.js";
import { markRevocationListsStale } from "../ca-certificates/crl.js";
import { lockOrganizationPki } from "../ca-certificates/signing.js";
import { issueCertificateForDevice, renewDeviceCertificate } from "./certificates/service.js";
import { DELETED_DEVICE_REASON } from "../../trpc/device-auth.js";

export { issueCertificateForDevice, renewDeviceCertificate };


/**
 * Revokes every still-valid certificate of these devices in one statement. It keeps the PKI
 * capability's invariants (organization PKI lock, stale revocation lists in the same
 * transaction) like revokeAllCertificatesOfDevice does for one device, but set-based, so a
 * bulk delete of thousands of devices is not a loop of queries.
 */
export async function revokeCertificatesOfDevices(db: DbTx, organizationId: string, deviceIds: string[]): Promise<number> {
  if (deviceIds.length === 0) return 0;
  await lockOrganizationPki(db, organizationId);
  const revoked = await db.$queryRaw<{ issuerKey: string }[]>`
    UPDATE "DeviceCertificate"
       SET "revoked" = TRUE, "revokedAt" = ${UTC_NOW}, "revokeReason" = ${DELETED_DEVICE_REASON}
     WHERE "organizationId" = ${organizationId}::uuid
       AND "deviceId" IN (SELECT jsonb_array_elements_text(${JSON.stringify(deviceIds)}::jsonb)::uuid)
       AND NOT "revoked"
    RETURNING "issuerKey"`;
  await markRevocationListsStale(db, organizationId, revoked.map((r) => r.issuerKey));
  return revoked.length;
}
