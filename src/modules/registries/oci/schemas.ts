// The OCI registry resource exactly as the spec writes it (spec op 2 for the creation), the
// inputs of the operations around it, and the mapper from the database row.
import { z } from "zod";
import type { GlobalOciRegistry, OciRegistry, OciSyncRecord } from "../../../generated/prisma/client.js";
import { pagingInput, pageOutput } from "../../../lib/paging.js";
import { ownerMark, ownerMarkOutput } from "../../../lib/owner-mark.js";
import {
  bodyBoolean, registryCredential, registryName, REGISTRY_AUTH_TYPES, registryUrl, syncIntervalMinutes, type RegistryAuthType,
} from "../fields.js";

export const OCI_REGISTRY_TYPES = ["GENERIC"] as const;
export const HEALTH_STATUSES = ["healthy", "unhealthy", "unknown"] as const;

/**
 * A repository name of the OCI distribution spec with at least one namespace component:
 * `<namespace>/<name>` (deeper paths such as `team/apps/web` are allowed).
 */
const REPOSITORY_COMPONENT = /^[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*$/;
export function isValidRepository(value: string): boolean {
  const parts = value.split("/");
  return value.length <= 255 && parts.length >= 2 && parts.every((part) => REPOSITORY_COMPONENT.test(part));
}

const description = z.string().max(500);
const url = registryUrl((parsed, ctx) => {
  if (parsed.search || parsed.hash) ctx.addIssue({ code: "custom", message: "must not have a ?query or #fragment" });
}).transform((value) => value.replace(/\/+$/, ""));
const credential = registryCredential("BASIC: username:password; TOKEN: the raw token. Encrypted at rest, never returned");
const repository = z.string().trim().refine(isValidRepository, { message: "must be <namespace>/<name> (lowercase OCI repository name)" });
const repositories = z.array(repository).max(200).transform((list) => [...new Set(list)]);

export const createOciRegistryInput = z.object({
  name: registryName,
  description: description.optional(),
  url,
  registryType: z.enum(OCI_REGISTRY_TYPES).default("GENERIC"),
  authType: z.enum(REGISTRY_AUTH_TYPES).default("NONE"),
  credential: credential.optional(),
  verifyTls: bodyBoolean.default(true),
  enabled: bodyBoolean.default(true),
  repositories: repositories.default([]),
  syncIntervalMinutes: syncIntervalMinutes.default(60),
});
export type CreateOciRegistryInput = z.infer<typeof createOciRegistryInput>;

export const updateOciRegistryInput = z.object({
  id: z.string().uuid(),
  name: registryName.optional(),
  description: description.nullable().optional().describe("null clears it"),
  url: url.optional(),
  registryType: z.enum(OCI_REGISTRY_TYPES).optional(),
  authType: z.enum(REGISTRY_AUTH_TYPES).optional(),
  credential: credential.optional(),
  verifyTls: bodyBoolean.optional(),
  enabled: bodyBoolean.optional(),
  repositories: repositories.optional(),
  syncIntervalMinutes: syncIntervalMinutes.optional(),
});
export type UpdateOciRegistryInput = z.infer<typeof updateOciRegistryInput>;

export const ociRegistryOutput = z.object({
  id: z.string(),
  organizationId: z.string(),
  name: z.string(),
  description: z.string().nullable().optional(),
  url: z.string(),
  registryType: z.enum(OCI_REGISTRY_TYPES),
  authType: z.enum(REGISTRY_AUTH_TYPES),
  hasCredentials: z.boolean(),
  verifyTls: z.boolean(),
  lastHealthCheck: z.string().datetime().nullable().optional(),
  healthStatus: z.string().nullable().optional().describe("healthy, unhealthy or unknown"),
  lastSyncAt: z.string().datetime().nullable().optional(),
  lastSyncError: z.string().nullable().optional(),
  syncIntervalMinutes: z.number(),
  enabled: z.boolean(),
  repositories: z.array(z.string()),
  ...ownerMarkOutput,
  createdAt: z.string().datetime(),
  updatedAt: z.string().datetime(),
});
export type OciRegistryDto = z.infer<typeof ociRegistryOutput>;

export const ociRegistryPageOutput = pageOutput(ociRegistryOutput);

export const healthCheckOutput = z.object({
  registryId: z.string(),
  healthStatus: z.enum(HEALTH_STATUSES),
  lastHealthCheck: z.string().datetime(),
  httpStatus: z.number().optional().describe("status of GET /v2/ (after the token exchange, if any)"),
  message: z.string().optional().describe("why the registry is not healthy"),
  responseTimeMs: z.number(),
});
export type HealthCheckResult = z.infer<typeof healthCheckOutput>;

/**
 * The fields a tenant's and a global OCI registry show alike (../../global-registries/schemas.ts).
 * Every spec field is present; the nullable ones are null until they have a value.
 */
export function ociRegistryFields(row: OciRegistry | GlobalOciRegistry) {
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
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}

export function toOciRegistryDto(row: OciRegistry): OciRegistryDto {
  return {
    ...ociRegistryFields(row),
    ...ownerMark(row),
    organizationId: row.organizationId,
    registryType: row.registryType as OciRegistryDto["registryType"],
    authType: row.authType as RegistryAuthType,
  };
}

export const syncHistoryInput = z.object({ id: z.string().uuid(), ...pagingInput });

/** One repository of a sync run (the spec's perRepository item). */
export const repositoryReportOutput = z.object({
  repository: z.string(), tagCount: z.number(), found: z.number(), imported: z.number(), updated: z.number(), errors: z.array(z.string()),
});

/** The fields of the spec's marketplace store sync record that every sync record has (OCI registries, the marketplace store). */
export const syncRunFields = {
  id: z.string(),
  scope: z.literal("tenant"),
  organizationId: z.string(),
  status: z.enum(["success", "failed"]),
  repositoriesFound: z.number(),
  applicationsFound: z.number().describe("application packages whose description was readable"),
  applicationsImported: z.number().describe("new applications and new versions"),
  applicationsUpdated: z.number().describe("known versions whose manifest changed"),
  errors: z.array(z.string()),
  syncDurationMs: z.number(),
  triggeredBy: z.string().nullable().describe("the user id for manual runs, scheduler for scheduled runs, null when unknown"),
  createdAt: z.string().datetime(),
};
type SyncRunRow = Pick<OciSyncRecord, "id" | "organizationId" | "status" | "repositoriesFound" | "applicationsFound" | "applicationsImported"
  | "applicationsUpdated" | "errors" | "syncDurationMs" | "triggeredBy" | "createdAt">;

export function toSyncRunDto(row: SyncRunRow) {
  return {
    id: row.id,
    scope: "tenant" as const,
    organizationId: row.organizationId,
    status: row.status as "success" | "failed",
    repositoriesFound: row.repositoriesFound,
    applicationsFound: row.applicationsFound,
    applicationsImported: row.applicationsImported,
    applicationsUpdated: row.applicationsUpdated,
    errors: row.errors as string[],
    syncDurationMs: row.syncDurationMs,
    triggeredBy: row.triggeredBy,
    createdAt: row.createdAt.toISOString(),
  };
}

/** The marketplace store sync record of the spec, for an OCI registry (docs/registries.md). */
export const ociSyncRecordOutput = z.object({
  ...syncRunFields,
  registryId: z.string(),
  perRepository: z.array(repositoryReportOutput),
  skipped: z.array(z.object({ repository: z.string(), tag: z.string(), reason: z.string() })).describe("tags that were not imported, with the reason"),
});
export type OciSyncRecordDto = z.infer<typeof ociSyncRecordOutput>;

export const ociSyncHistoryOutput = z.object({
  data: z.array(ociSyncRecordOutput),
  total: z.number(),
  hasMore: z.boolean(),
});

export function toOciSyncRecordDto(row: OciSyncRecord): OciSyncRecordDto {
  return {
    ...toSyncRunDto(row),
    registryId: row.registryId,
    perRepository: row.perRepository as OciSyncRecordDto["perRepository"],
    skipped: row.skipped as OciSyncRecordDto["skipped"],
  };
}
