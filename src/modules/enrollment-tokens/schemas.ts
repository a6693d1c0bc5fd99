// The enrollment token resource: `token` (the secret) only in the creation response,
// `tokenPrefix` (its first 8 characters) everywhere else.
import { z } from "zod";
import type { EnrollmentToken } from "../../generated/prisma/client.js";
import { labelsOf, labelsSchema } from "../devices/labels.js";

export const ENROLLMENT_TOKEN_PREFIX = "fme_";
export const ENROLLMENT_TOKEN_STATUSES = ["active", "expired", "exhausted", "revoked"] as const;
export type EnrollmentTokenStatus = (typeof ENROLLMENT_TOKEN_STATUSES)[number];
/** How a device enrolling with the token is admitted (docs/admission.md). */
export const ENROLLMENT_TOKEN_MODES = ["auto", "approval", "preauthorized"] as const;
export type EnrollmentTokenMode = (typeof ENROLLMENT_TOKEN_MODES)[number];
const modeSchema = z
  .enum(ENROLLMENT_TOKEN_MODES)
  .describe("auto: a device is admitted at once; approval: it waits in the lobby (GET /enrollment-requests) until approved; preauthorized: only devices of the pre-authorized list are admitted");

export const createEnrollmentTokenInput = z.object({
  name: z.string().trim().min(1).max(100),
  description: z.string().max(500).optional(),
  labels: labelsSchema.default({}).describe("applied to every device that enrolls with this token"),
  mode: modeSchema.default("auto"),
  expiresAt: z.iso
    .datetime({ offset: true })
    .refine((v) => Date.parse(v) > Date.now(), { message: "must be in the future" })
    .optional()
    .describe("after this time the token enrolls nothing (default: no expiry)"),
  maxUses: z.number().int().min(1).max(10_000_000).optional().describe("how many devices may enroll with it (default: unlimited)"),
});

export const enrollmentTokenOutput = z.object({
  id: z.string().uuid(),
  name: z.string(),
  description: z.string().nullable(),
  tokenPrefix: z.string(),
  labels: z.record(z.string(), z.string()),
  mode: z.enum(ENROLLMENT_TOKEN_MODES),
  expiresAt: z.string().datetime().nullable(),
  maxUses: z.number().int().nullable(),
  useCount: z.number().int(),
  /** null when unlimited */
  remainingUses: z.number().int().nullable(),
  status: z.enum(ENROLLMENT_TOKEN_STATUSES),
  lastUsedAt: z.string().datetime().nullable(),
  revokedAt: z.string().datetime().nullable(),
  createdBy: z.string().uuid().nullable(),
  createdAt: z.string().datetime(),
});
export type EnrollmentTokenDto = z.infer<typeof enrollmentTokenOutput>;

export const createdEnrollmentTokenOutput = enrollmentTokenOutput.extend({
  token: z.string().describe("the secret; shown in this response only, never retrievable again"),
});

export function statusOfToken(row: Pick<EnrollmentToken, "revokedAt" | "expiresAt" | "maxUses" | "useCount">, now = new Date()): EnrollmentTokenStatus {
  if (row.revokedAt) return "revoked";
  if (row.expiresAt && row.expiresAt <= now) return "expired";
  if (row.maxUses !== null && row.useCount >= row.maxUses) return "exhausted";
  return "active";
}

export function toEnrollmentTokenDto(row: EnrollmentToken): EnrollmentTokenDto {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    tokenPrefix: row.tokenPrefix,
    labels: labelsOf(row.labels),
    mode: row.mode as EnrollmentTokenMode,
    expiresAt: row.expiresAt?.toISOString() ?? null,
    maxUses: row.maxUses,
    useCount: row.useCount,
    remainingUses: row.maxUses === null ? null : Math.max(0, row.maxUses - row.useCount),
    status: statusOfToken(row),
    lastUsedAt: row.lastUsedAt?.toISOString() ?? null,
    revokedAt: row.revokedAt?.toISOString() ?? null,
    createdBy: row.createdById,
    createdAt: row.createdAt.toISOString(),
  };
}
