// The application catalog's payloads (the spec leaves them open; docs/registries.md describes
// them) and the mappers from database rows.
import { z } from "zod";
import type { Application, ApplicationVersion } from "../../generated/prisma/client.js";
import { pageOutput, pagingInput } from "../../lib/paging.js";

export const applicationIdInput = z.object({ id: z.string().uuid() });
export const versionIdInput = z.object({ id: z.string().uuid(), versionId: z.string().uuid() });
export const pagedApplicationIdInput = z.object({ id: z.string().uuid(), ...pagingInput });
export const pagedVersionIdInput = z.object({ id: z.string().uuid(), versionId: z.string().uuid(), ...pagingInput });
export const pagingOnlyInput = z.object({ ...pagingInput });

export const listApplicationsInput = z.object({
  ...pagingInput,
  category: z.string().trim().min(1).max(200).optional().describe("exact category, case-insensitive"),
  vendor: z.string().trim().min(1).max(200).optional().describe("exact vendor name, case-insensitive"),
  registryId: z.string().uuid().optional().describe("the registry the latest version came from"),
  q: z.string().trim().min(1).max(200).optional().describe("text in the key, name or description, or an exact tag"),
  tag: z.string().trim().min(1).max(200).optional().describe("an exact tag the application carries"),
});
export type ListApplicationsInput = z.infer<typeof listApplicationsInput>;

const vendorOutput = z.object({ name: z.string(), site: z.string().optional() });

const sourceOutput = z.object({
  type: z.enum(["git", "oci"]),
  registryId: z.string().optional(),
  registryName: z.string().optional().describe("absent when the registry was deleted"),
  path: z.string().describe("manifest path inside the Git repository, or the OCI reference"),
  revision: z.string().optional().describe("Git commit or OCI manifest digest"),
});
export type SourceDto = z.infer<typeof sourceOutput>;

const componentOutput = z.object({
  name: z.string(),
  properties: z.object({
    type: z.enum(["system-image"]).optional().describe("system-image: a RAUC bundle replacing the device's root file system (docs/os-updates.md); absent: a compose or Helm package"),
    repository: z.string(),
    revision: z.string(),
    wait: z.boolean().optional(),
    timeout: z.string().optional(),
    digest: z.string().optional().describe("an https:// archive's sha256, checked before the compose file is read; a system image's bundle sha256 (required there)"),
    removeVolumes: z.boolean().optional().describe("removal takes the compose project's volumes down too (default: they stay)"),
  }),
});

export const profileOutput = z.object({
  id: z.string(),
  type: z.enum(["compose", "helm"]),
  description: z.string().optional(),
  components: z.array(componentOutput),
  requiredResources: z
    .object({
      cpu: z.object({ cores: z.number(), architectures: z.array(z.string()).optional() }).optional(),
      memory: z.string().optional(),
      storage: z.string().optional(),
    })
    .optional(),
});

export const parametersOutput = z.record(
  z.string(),
  z.object({
    value: z.unknown().optional().describe("the default value"),
    targets: z.array(z.object({ pointer: z.string(), components: z.array(z.string()) })),
    description: z.string().optional(),
    required: z.boolean().optional().describe("a deployment must give a value"),
    secret: z.boolean().optional().describe("a deployment's value is stored encrypted and never returned"),
    schema: z
      .object({
        type: z.enum(["string", "integer", "number", "boolean"]).optional(),
        enum: z.array(z.union([z.string(), z.number(), z.boolean()])).optional(),
        minimum: z.number().optional(),
        maximum: z.number().optional(),
        maxLength: z.number().optional(),
        pattern: z.string().optional(),
      })
      .optional()
      .describe("the declaration a deployment's value is checked against (docs/deployments.md)"),
  }),
);

const applicationFields = {
  id: z.string().uuid(),
  key: z.string().describe("metadata.id of the manifests: the application's key in the organization"),
  name: z.string(),
  description: z.string().optional(),
  category: z.string().optional(),
  tags: z.array(z.string()),
  vendor: vendorOutput.optional(),
  latestVersion: z.string().describe("highest SemVer version"),
  latestVersionId: z.string().uuid(),
  versionCount: z.number().int(),
  hasIcon: z.boolean(),
  iconUrl: z.string().optional().describe("GET it for the icon of the latest version"),
  source: sourceOutput.describe("where the latest version came from"),
  createdAt: z.string().datetime(),
  updatedAt: z.string().datetime(),
};

export const applicationOutput = z.object(applicationFields);
export const applicationPageOutput = pageOutput(applicationOutput);

export const applicationDetailOutput = z.object({
  ...applicationFields,
  profiles: z.array(profileOutput).describe("the latest version's admitted deployment profiles"),
  parameters: parametersOutput.describe("the latest version's parameters"),
  warnings: z.array(z.string()).describe("the latest version's import warnings (dropped profiles, ignored fields)"),
});

export const versionOutput = z.object({
  id: z.string().uuid(),
  applicationId: z.string().uuid(),
  version: z.string(),
  apiVersion: z.string(),
  name: z.string(),
  description: z.string().optional(),
  category: z.string().optional(),
  tags: z.array(z.string()),
  vendor: vendorOutput.optional(),
  profiles: z.array(profileOutput),
  parameters: parametersOutput,
  warnings: z.array(z.string()),
  manifestDigest: z.string().describe("SHA-256 of the manifest text"),
  hasIcon: z.boolean(),
  source: sourceOutput,
  createdAt: z.string().datetime(),
  updatedAt: z.string().datetime(),
});
export const versionPageOutput = pageOutput(versionOutput);

export const categoryPageOutput = pageOutput(z.object({ name: z.string(), applicationCount: z.number().int() }));
export const vendorPageOutput = pageOutput(z.object({ name: z.string(), site: z.string().optional(), applicationCount: z.number().int() }));

export const deploymentSummaryOutput = z.object({
  id: z.string().uuid(),
  name: z.string(),
  applicationId: z.string().uuid(),
  versionId: z.string().uuid(),
  version: z.string(),
  status: z.string(),
  createdAt: z.string().datetime(),
});
export type DeploymentSummary = z.infer<typeof deploymentSummaryOutput>;
export const deploymentPageOutput = pageOutput(deploymentSummaryOutput);

export const deletedApplicationOutput = z.object({ id: z.string().uuid(), deleted: z.literal(true), deletedVersions: z.number().int() });

export type VersionRow = Omit<ApplicationVersion, "iconBase64">;

const vendorOf = (name: string | null, site: string | null) => (name ? { vendor: { name, ...(site ? { site } : {}) } } : {});
const optional = <K extends string>(key: K, value: string | null) => (value !== null ? ({ [key]: value } as Record<K, string>) : {});

function sourceOf(type: string, registryId: string | null, path: string | null, revision: string | null, names: ReadonlyMap<string, string>): SourceDto {
  const name = registryId ? names.get(registryId) : undefined;
  return {
    type: type as SourceDto["type"],
    ...(registryId ? { registryId } : {}),
    ...(name ? { registryName: name } : {}),
    path: path ?? "",
    ...(revision ? { revision } : {}),
  };
}

export function toApplicationDto(app: Application, hasIcon: boolean, registryNames: ReadonlyMap<string, string>, latestRevision: string | null = null) {
  return {
    id: app.id,
    key: app.appKey,
    name: app.name,
    ...optional("description", app.description),
    ...optional("category", app.category),
    tags: app.tags,
    ...vendorOf(app.vendorName, app.vendorSite),
    latestVersion: app.latestVersion ?? "",
    latestVersionId: app.latestVersionId ?? "",
    versionCount: app.versionCount,
    hasIcon,
    ...(hasIcon ? { iconUrl: `/api/v1/applications/${app.id}/icon` } : {}),
    source: sourceOf(app.sourceType, app.sourceRegistryId, app.sourcePath, latestRevision, registryNames),
    createdAt: app.createdAt.toISOString(),
    updatedAt: app.updatedAt.toISOString(),
  };
}

export function toVersionDto(row: VersionRow, registryNames: ReadonlyMap<string, string>): z.infer<typeof versionOutput> {
  return {
    id: row.id,
    applicationId: row.applicationId,
    version: row.version,
    apiVersion: row.apiVersion,
    name: row.name,
    ...optional("description", row.description),
    ...optional("category", row.category),
    tags: row.tags,
    ...vendorOf(row.vendorName, row.vendorSite),
    profiles: row.profiles as z.infer<typeof profileOutput>[],
    parameters: (row.parameters ?? {}) as z.infer<typeof parametersOutput>,
    warnings: row.warnings,
    manifestDigest: row.manifestDigest,
    hasIcon: row.iconSha256 !== null,
    source: sourceOf(row.sourceType, row.sourceRegistryId, row.sourcePath, row.sourceRevision, registryNames),
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}
