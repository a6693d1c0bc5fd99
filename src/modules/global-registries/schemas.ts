// The global OCI registry of the spec: the OCI registry's fields without organizationId, plus
// mandatory and priority. Inputs reuse the OCI registry's field rules.
import { z } from "zod";
import type { GlobalOciRegistry } from "../../generated/prisma/client.js";
import { pageOutput, pagingInput } from "../../lib/paging.js";
import { createOciRegistryInput, ociRegistryOutput, updateOciRegistryInput } from "../registries/oci/schemas.js";

const mandatory = z.boolean().pipe(z.boolean()).describe("whether the registry applies to all tenants");
const priority = z.number().int().min(0).max(1_000_000).describe("position in the combined registry list (ascending)");

export const createGlobalRegistryInput = createOciRegistryInput.extend({
  mandatory: mandatory.default(false),
  priority: priority.default(0),
});
export type CreateGlobalRegistryInput = z.infer<typeof createGlobalRegistryInput>;

export const updateGlobalRegistryInput = updateOciRegistryInput.extend({
  mandatory: mandatory.optional(),
  priority: priority.optional(),
});
export type UpdateGlobalRegistryInput = z.infer<typeof updateGlobalRegistryInput>;

export const listGlobalRegistriesInput = z.object({ ...pagingInput, enabled: z.stringbool().optional() });
export const idInput = z.object({ id: z.string().uuid() });

export const globalRegistryOutput = ociRegistryOutput.omit({ organizationId: true }).extend({
  registryType: z.string(),
  authType: z.string(),
  repositories: z.array(z.string()).describe("when non-empty, catalog discovery on the registry is skipped"),
  mandatory: z.boolean(),
  priority: z.number(),
});
export type GlobalRegistryDto = z.infer<typeof globalRegistryOutput>;
export const globalRegistryPageOutput = pageOutput(globalRegistryOutput);
export const deletedOutput = z.object({ id: z.string(), deleted: z.literal(true) });

export function toGlobalRegistryDto(row: GlobalOciRegistry): GlobalRegistryDto {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    url: row.url,
    registryType: row.registryType,
    authType: row.authType,
    hasCredentials: row.credentialSealed !== null,
    verifyTls: row.verifyTls,
    lastHealthCheck: row.lastHealthCheck?.toISOString() ?? null,
    healthStatus: row.healthStatus,
    lastSyncAt: row.lastSyncAt?.toISOString() ?? null,
    lastSyncError: row.lastSyncError,
    syncIntervalMinutes: row.syncIntervalMinutes,
    enabled: row.enabled,
    repositories: row.repositories,
    mandatory: row.mandatory,
    priority: row.priority,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}
