// The API key resource as the spec writes it: `key` only in the creation response,
// `keyPrefix` (its first 8 characters) everywhere else; `platform` added (platform keys).
import { z } from "zod";
import type { ApiKey } from "../../generated/prisma/client.js";
import { permissionList } from "../roles/schemas.js";
import { PLATFORM_ADMIN } from "../../trpc/permissions.js";

/**
 * A platform key names platform:admin: with a Super Admin as its creator it acts across every
 * organization. No wildcard makes one (src/trpc/permissions.ts).
 */
export const isPlatformKey = (permissions: readonly string[]) => permissions.includes(PLATFORM_ADMIN);

export const apiKeyName = z.string().trim().min(2).max(100);
export const apiKeyDescription = z.string().max(500);
export const futureDateTime = z.iso
  .datetime({ offset: true })
  .refine((v) => Date.parse(v) > Date.now(), { message: "must be in the future" });

export const createApiKeyInput = z.object({
  orgId: z.string().uuid(),
  name: apiKeyName,
  description: apiKeyDescription.optional(),
  permissions: permissionList.default([]),
  expiresAt: futureDateTime.optional(),
});

/** PUT: every field optional; null clears description or expiresAt. */
export const updateApiKeyInput = z.object({
  orgId: z.string().uuid(),
  id: z.string().uuid(),
  name: apiKeyName.optional(),
  description: apiKeyDescription.nullable().optional(),
  permissions: permissionList.optional(),
  expiresAt: futureDateTime.nullable().optional(),
});

/** How long a rotated key may keep working beside its replacement, at most (7 days). */
export const MAX_ROTATION_GRACE_SECONDS = 7 * 86_400;

/** POST .../{id}/rotate: how long the old key keeps working, and the new key's expiry if not the old one's. */
export const rotateApiKeyInput = z.object({
  orgId: z.string().uuid(),
  id: z.string().uuid(),
  graceSeconds: z.number().int().min(0).max(MAX_ROTATION_GRACE_SECONDS).default(0)
    .describe("how long the old key keeps working beside the new one, in seconds (0, the default: revoked at once; at most 7 days, never beyond its own expiry)"),
  expiresAt: futureDateTime.nullable().optional()
    .describe("the new key's expiry; absent: the old key's (which must still be in the future); null: none"),
});

export const apiKeyOutput = z.object({
  id: z.string().uuid(),
  name: z.string(),
  description: z.string().optional(),
  keyPrefix: z.string().length(8),
  permissions: z.array(z.string()),
  platform: z.boolean().describe(
    "true when the key names platform:admin: a platform key, with Super Admin power across every organization while its creator is a Super Admin. " +
      "A wildcard (* or <resource>:*) never makes one; it grants only permissions of the key's organization.",
  ),
  lastUsedAt: z.string().datetime().optional(),
  expiresAt: z.string().datetime().optional(),
  createdAt: z.string().datetime(),
  createdBy: z.string().uuid().optional(),
  replacedById: z.string().uuid().optional()
    .describe("set once the key was rotated: the key that replaced it. It keeps working until its handover ends (expiresAt), then answers 401 like an expired key"),
  replacedAt: z.string().datetime().optional().describe("when the key was rotated"),
});
export type ApiKeyDto = z.infer<typeof apiKeyOutput>;

/** The key a rotation replaced, as the key that replaced it shows it: its use stays readable after it ends. */
export const replacedKeyOutput = z.object({
  id: z.string().uuid(),
  keyPrefix: z.string().length(8),
  createdAt: z.string().datetime(),
  lastUsedAt: z.string().datetime().optional().describe("the old key's last use, also once it no longer works"),
  replacedAt: z.string().datetime(),
  revokedAt: z.string().datetime().optional(),
  expiresAt: z.string().datetime().optional(),
});

/** A list entry also names its creator (a member's name and e-mail), so nobody has to look up the id. */
export const apiKeyListItemOutput = apiKeyOutput.extend({
  creator: z.object({ id: z.string().uuid(), name: z.string(), email: z.string() }).optional()
    .describe("the creating user's name and e-mail; absent when the key has no creator or the account is gone"),
  replaces: replacedKeyOutput.optional().describe("the key this one replaced in a rotation, with its use history"),
});

export const createdApiKeyOutput = apiKeyOutput.extend({
  key: z.string().describe("the full key: returned once, never retrievable again"),
});

export const rotatedApiKeyOutput = createdApiKeyOutput.extend({
  replaced: z.object({
    id: z.string().uuid(),
    keyPrefix: z.string().length(8),
    revokedAt: z.string().datetime().optional().describe("set when the old key was revoked at once (graceSeconds 0)"),
    expiresAt: z.string().datetime().optional().describe("set when the old key keeps working until then (graceSeconds > 0)"),
  }).describe("the key this one replaces"),
});

export function toApiKeyDto(row: ApiKey): ApiKeyDto {
  return {
    id: row.id,
    name: row.name,
    ...(row.description !== null ? { description: row.description } : {}),
    keyPrefix: row.keyPrefix,
    permissions: row.permissions,
    platform: isPlatformKey(row.permissions),
    ...(row.lastUsedAt ? { lastUsedAt: row.lastUsedAt.toISOString() } : {}),
    ...(row.expiresAt ? { expiresAt: row.expiresAt.toISOString() } : {}),
    createdAt: row.createdAt.toISOString(),
    ...(row.createdById ? { createdBy: row.createdById } : {}),
    ...(row.replacedById ? { replacedById: row.replacedById } : {}),
    ...(row.replacedAt ? { replacedAt: row.replacedAt.toISOString() } : {}),
  };
}

export function toReplacedKeyDto(row: ApiKey): z.infer<typeof replacedKeyOutput> {
  return {
    id: row.id,
    keyPrefix: row.keyPrefix,
    createdAt: row.createdAt.toISOString(),
    ...(row.lastUsedAt ? { lastUsedAt: row.lastUsedAt.toISOString() } : {}),
    replacedAt: (row.replacedAt ?? row.updatedAt).toISOString(),
    ...(row.revokedAt ? { revokedAt: row.revokedAt.toISOString() } : {}),
    ...(row.expiresAt ? { expiresAt: row.expiresAt.toISOString() } : {}),
  };
}
