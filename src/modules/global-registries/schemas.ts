// The global OCI registry of the spec: the OCI registry's fields without organizationId, plus
// mandatory and priority. Inputs reuse the OCI registry's field rules.
import { z } from "zod";
import type { GlobalOciRegistry } from "../../generated/prisma/client.js";
import { pageOutput } from "../../lib/paging.js";
import { bodyBoolean } from "../registries/fields.js";
import { createOciRegistryInput, ociRegistryFields, ociRegistryOutput, updateOciRegistryInput } from "../registries/oci/schemas.js";

const mandatory = bodyBoolean.describe("whether the registry applies to all tenants");
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

export const globalRegistryOutput = ociRegistryOutput.omit({ organizationId: true, managedBy: true, managedCommit: true }).extend({
  registryType: z.string(),
  authType: z.string(),
  repositories: z.array(z.string()).describe("when non-empty, catalog discovery on the registry is skipped"),
  mandatory: z.boolean(),
  priority: z.number(),
});
export type GlobalRegistryDto = z.infer<typeof globalRegistryOutput>;
export const globalRegistryPageOutput = pageOutput(globalRegistryOutput);

export function toGlobalRegistryDto(row: GlobalOciRegistry): GlobalRegistryDto {
  return { ...ociRegistryFields(row), mandatory: row.mandatory, priority: row.priority };
}
