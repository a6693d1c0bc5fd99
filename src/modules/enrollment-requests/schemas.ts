// The enrollment request (the lobby's entry): what the device said of itself, what the service
// saw, the key's fingerprint, and the decision.
import { z } from "zod";
import type { EnrollmentRequest } from "../../generated/prisma/client.js";
import { labelSelectorSchema, labelsOf, labelsSchema } from "../devices/labels.js";

export const ENROLLMENT_REQUEST_STATES = ["pending", "approved", "rejected", "conflict"] as const;
export type EnrollmentRequestState = (typeof ENROLLMENT_REQUEST_STATES)[number];

export const enrollmentRequestOutput = z.object({
  id: z.string().uuid(),
  state: z.enum(ENROLLMENT_REQUEST_STATES).describe("pending: awaiting a decision; conflict: a pre-authorized id enrolled with another key (refused, never admitted)"),
  deviceId: z.string().uuid().nullable().describe("the device awaiting approval or admitted; null for a conflict"),
  reportedDeviceId: z.string().describe("what the device says: its id"),
  name: z.string().describe("what the device says: its name"),
  facts: z.record(z.string(), z.unknown()).describe("what the device says: its facts"),
  requestedLabels: z.record(z.string(), z.string()).describe("the labels it asked for, with its token's; applied on approval"),
  sourceAddress: z.string().nullable().describe("what the service saw: the request's source address"),
  enrollmentTokenId: z.string().uuid().nullable(),
  tokenName: z.string().describe("what the service saw: the enrollment token used"),
  keyFingerprint: z.string().describe("SHA-256 (hex) of the DER SubjectPublicKeyInfo of the device's key"),
  attestation: z.object({
    ekHash: z.string().describe("SHA-256 (hex) of the TPM endorsement key's SubjectPublicKeyInfo"),
    ekIssuer: z.string(),
    manufacturer: z.string().nullable().describe("the TPM manufacturer id its EK certificate names"),
    trustedCaId: z.string(),
    trustedCaName: z.string(),
  }).nullable().describe("what the service verified: the device's key is held by a TPM whose EK chains to this trusted EK CA (fleet-agent enroll --tpm); null: a software key"),
  reason: z.string().nullable(),
  approvalLabels: z.record(z.string(), z.string()).nullable(),
  decidedBy: z.object({ type: z.string(), id: z.string().nullable() }).nullable(),
  decidedAt: z.string().datetime().nullable(),
  createdAt: z.string().datetime().describe("what the service saw: when"),
});
export type EnrollmentRequestDto = z.infer<typeof enrollmentRequestOutput>;

export function toEnrollmentRequestDto(row: EnrollmentRequest): EnrollmentRequestDto {
  return {
    id: row.id,
    state: row.state as EnrollmentRequestState,
    deviceId: row.deviceId,
    reportedDeviceId: row.reportedDeviceId,
    name: row.name,
    facts: (row.facts ?? {}) as Record<string, unknown>,
    requestedLabels: labelsOf(row.requestedLabels),
    sourceAddress: row.sourceAddress,
    enrollmentTokenId: row.enrollmentTokenId,
    tokenName: row.tokenName,
    keyFingerprint: row.keyFingerprint,
    attestation: (row.attestation ?? null) as EnrollmentRequestDto["attestation"],
    reason: row.reason,
    approvalLabels: row.approvalLabels === null ? null : labelsOf(row.approvalLabels),
    decidedBy: row.decidedByType ? { type: row.decidedByType, id: row.decidedById } : null,
    decidedAt: row.decidedAt?.toISOString() ?? null,
    createdAt: row.createdAt.toISOString(),
  };
}

const nonEmptySelector = labelSelectorSchema
  .refine((v) => Object.keys(v).length > 0, "name at least one label: an empty selector would match every request")
  .describe("every pending request whose requested labels match all pairs");

export const approveOneInput = z.object({
  id: z.string().uuid(),
  labels: labelsSchema.default({}).describe("labels to give the device on top of those it asked for (these win on a shared key)"),
});
export const approveManyInput = z.object({ labelSelector: nonEmptySelector, labels: approveOneInput.shape.labels });
export const rejectOneInput = z.object({ id: z.string().uuid(), reason: z.string().trim().max(500).optional() });
export const rejectManyInput = z.object({ labelSelector: nonEmptySelector, reason: rejectOneInput.shape.reason });

export const decisionOutput = z.object({
  decided: z.number().int().describe("how many requests this decided"),
  skipped: z.number().int().describe("approvals left pending because the labels together would be more than the device limit"),
  requests: z.array(z.object({ id: z.string().uuid(), deviceId: z.string().uuid().nullable() })),
});
