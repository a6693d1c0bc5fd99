// The factory's list (docs/admission.md, "Pre-authorized devices"): a device id, optionally its
// key's fingerprint (or the public key / certificate, whose key is fingerprinted here) and its TPM
// endorsement key hash, and the labels it gets when it enrolls.
import { z } from "zod";
import type { PreauthorizedDevice } from "../../generated/prisma/client.js";
import { labelsOf, labelsSchema } from "../devices/labels.js";
import { reportedDeviceId } from "../agent/schemas.js";
import { normalizeFingerprint, pemKeyFingerprint } from "../enrollment-requests/key-fingerprint.js";

export const MAX_IMPORT_ENTRIES = 10_000;

const fingerprint = z
  .string()
  .transform((v, ctx) => normalizeFingerprint(v) ?? (ctx.addIssue({ code: "custom", message: "a SHA-256 fingerprint: 64 hex digits (colons and a sha256: prefix allowed)" }), z.NEVER));

export const preauthorizedEntryInput = z
  .object({
    deviceId: reportedDeviceId.describe("the id the device enrolls with (fleet-agent enroll --device-id; its reportedDeviceId)"),
    keyFingerprint: fingerprint.optional().describe("SHA-256 of the DER SubjectPublicKeyInfo of the device's key"),
    publicKey: z.string().max(16_000).optional().describe("instead of keyFingerprint: the device's public key or a certificate of it (PEM)"),
    ekHash: fingerprint.optional().describe("SHA-256 of the TPM endorsement key's public part"),
    labels: labelsSchema.default({}).describe("given to the device when it enrolls (they win over the token's and the device's)"),
  })
  .strict()
  .transform((v, ctx) => {
    let key = v.keyFingerprint ?? null;
    if (v.publicKey !== undefined) {
      const fromPem = pemKeyFingerprint(v.publicKey);
      if (!fromPem) ctx.addIssue({ code: "custom", path: ["publicKey"], message: "not a PEM public key or certificate" });
      else if (key && key !== fromPem) ctx.addIssue({ code: "custom", path: ["publicKey"], message: "names another key than keyFingerprint" });
      key = fromPem ?? key;
    }
    return { reportedDeviceId: v.deviceId, keyFingerprint: key, ekHash: v.ekHash ?? null, labels: v.labels };
  });
export type PreauthorizedEntry = z.output<typeof preauthorizedEntryInput>;

export const importInput = z
  .object({
    devices: z.array(z.unknown()).max(MAX_IMPORT_ENTRIES).optional().describe("the list as JSON: [{ deviceId, keyFingerprint?, publicKey?, ekHash?, labels? }]"),
    csv: z.string().max(8 * 1024 * 1024).optional().describe("the list as CSV with a header row: deviceId, keyFingerprint, publicKey, ekHash, labels (key=value,key2=value2; quote it)"),
  })
  .strict()
  .refine((v) => (v.devices === undefined) !== (v.csv === undefined), { message: "give exactly one of devices or csv", path: ["devices"] });

export const preauthorizedOutput = z.object({
  id: z.string().uuid(),
  deviceId: z.string().describe("the reported device id"),
  keyFingerprint: z.string().nullable(),
  ekHash: z.string().nullable(),
  labels: z.record(z.string(), z.string()),
  enrolledDeviceId: z.string().uuid().nullable().describe("the device admitted by this entry"),
  usedAt: z.string().datetime().nullable(),
  createdAt: z.string().datetime(),
  updatedAt: z.string().datetime(),
});

export function toPreauthorizedDto(row: PreauthorizedDevice): z.infer<typeof preauthorizedOutput> {
  return {
    id: row.id,
    deviceId: row.reportedDeviceId,
    keyFingerprint: row.keyFingerprint,
    ekHash: row.ekHash,
    labels: labelsOf(row.labels),
    enrolledDeviceId: row.deviceId,
    usedAt: row.usedAt?.toISOString() ?? null,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}
