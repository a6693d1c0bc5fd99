// Enrolled devices seeded in bulk for bench/fleet-day.ts (issue 52 allows it: "enrollment may be
// seeded in bulk to save time, the devices' keys and tokens real"). The load generator makes each
// device's own ES256 key, as an agent does, and hands the service only the public keys; the
// service process (bench/support/serve.ts, command `seed-identities`) signs a real certificate
// for each with the organization's default CA, by the same PKI code enrollment uses, and inserts
// the devices and their certificates a chunk at a time with one statement each. The devices then
// sign their own tokens with their keys and are authenticated as any enrolled device.
//
// What is skipped, and only this: the enrollment request itself (token use, CSR proof of
// possession, the per-device audit entry, device event and enrollment request record). At
// ~70 ms of service CPU per enrollment, 100,000 of them take over two hours of a two-core
// machine; seeding takes minutes. The enrollment's own cost is measured by the benchmark's
// real-protocol path (without BENCH seeding) and in docs/benchmarks.md.
import { randomUUID } from "node:crypto";
import fs from "node:fs";
import type { Services } from "../../src/services.js";
import { issueDeviceCertificateFromPublicKey } from "../../src/lib/pki/index.js";
import { defaultSigningCa } from "../../src/modules/devices/certificates/service.js";
import { openPrivateKey } from "../../src/modules/ca-certificates/signing.js";

export interface SeedRequest {
  reportedDeviceId: string;
  /** SPKI PEM of the device's own key */
  publicKeyPem: string;
  labels: Record<string, string>;
}

export interface SeedAnswer {
  reportedDeviceId: string;
  deviceId: string;
  certificatePem: string;
  notAfter: string;
}

/** rows per INSERT: one statement per table per chunk */
const CHUNK = 1000;

const INSERT_DEVICES = `
  INSERT INTO "Device" ("id", "organizationId", "name", "reportedDeviceId", "claimActive", "activeClaim", "status", "statusChangedAt",
                        "labels", "facts", "enrolledAt", "createdAt", "updatedAt", "admission")
  SELECT r."id", $1::uuid, r."reportedDeviceId", r."reportedDeviceId", TRUE, r."reportedDeviceId", 'provisioned', now() AT TIME ZONE 'UTC',
         r."labels", '{}'::jsonb, now() AT TIME ZONE 'UTC', now() AT TIME ZONE 'UTC', now() AT TIME ZONE 'UTC', 'admitted'
    FROM jsonb_to_recordset($2::jsonb) AS r("id" uuid, "reportedDeviceId" text, "labels" jsonb)`;

const INSERT_CERTIFICATES = `
  INSERT INTO "DeviceCertificate" ("id", "organizationId", "deviceId", "caId", "issuerKey", "serialNumber", "fingerprint", "subject", "issuer",
                                   "keyAlgorithm", "notBefore", "notAfter", "certificatePem", "createdAt")
  SELECT gen_random_uuid(), $1::uuid, r."deviceId", $2::uuid, $3, r."serialNumber", r."fingerprint", r."subject", r."issuer",
         r."keyAlgorithm", r."notBefore", r."notAfter", r."certificatePem", now() AT TIME ZONE 'UTC'
    FROM jsonb_to_recordset($4::jsonb) AS r("deviceId" uuid, "serialNumber" text, "fingerprint" text, "subject" text, "issuer" text,
                                            "keyAlgorithm" text, "notBefore" timestamp, "notAfter" timestamp, "certificatePem" text)`;

/** Signs and inserts every request's device; returns each device's id and certificate, in order. */
export async function seedIdentities(services: Services, organizationId: string, requests: SeedRequest[], validityDays: number): Promise<SeedAnswer[]> {
  const ca = await defaultSigningCa(services.prisma, organizationId);
  const caPrivateKeyPem = openPrivateKey(services.secrets, ca);
  const answers: SeedAnswer[] = [];
  for (let start = 0; start < requests.length; start += CHUNK) {
    const devices: Array<{ id: string; reportedDeviceId: string; labels: Record<string, string> }> = [];
    const certificates: Array<Record<string, string>> = [];
    for (const request of requests.slice(start, start + CHUNK)) {
      const id = randomUUID();
      const issued = await issueDeviceCertificateFromPublicKey({ caCertificatePem: ca.certificatePem, caPrivateKeyPem, deviceId: id, validityDays, publicKeyPem: request.publicKeyPem });
      const info = issued.inspected;
      devices.push({ id, reportedDeviceId: request.reportedDeviceId, labels: request.labels });
      certificates.push({
        deviceId: id, serialNumber: info.serialNumber, fingerprint: info.fingerprint, subject: info.subject, issuer: info.issuer,
        keyAlgorithm: info.keyAlgorithm, notBefore: info.notBefore.toISOString(), notAfter: info.notAfter.toISOString(), certificatePem: issued.certificatePem,
      });
      answers.push({ reportedDeviceId: request.reportedDeviceId, deviceId: id, certificatePem: issued.certificatePem, notAfter: info.notAfter.toISOString() });
    }
    // a device and its certificate together, or neither
    await services.prisma.$transaction(async (tx) => {
      await tx.$executeRawUnsafe(INSERT_DEVICES, organizationId, JSON.stringify(devices));
      await tx.$executeRawUnsafe(INSERT_CERTIFICATES, organizationId, ca.id, ca.issuerKey, JSON.stringify(certificates));
    });
  }
  await services.database.opened.raw.exec(`ANALYZE "Device"; ANALYZE "DeviceCertificate"`);
  return answers;
}

/** One JSON value per line, as the two processes hand them over. */
export function readJsonLines<T>(file: string): T[] {
  return fs.readFileSync(file, "utf8").split("\n").filter(Boolean).map((line) => JSON.parse(line) as T);
}

export function writeJsonLines(file: string, values: unknown[]): void {
  fs.writeFileSync(file, values.map((value) => JSON.stringify(value)).join("\n") + "\n", { mode: 0o600 });
}
