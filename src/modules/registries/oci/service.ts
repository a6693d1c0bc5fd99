// OCI registry rules. Every query carries the caller's organization, so another tenant's
// registry is simply not found (404). Credentials are checked and sealed exactly like the
// Git registries' (../git/credentials.ts).
import type { DbTx } from "../../../db/client.js";
import type { Prisma } from "../../../generated/prisma/client.js";
import type { SecretBox } from "../../../lib/crypto.js";
import { assertCredentialFits, sealCredential } from "../git/credentials.js";
import type { CreateOciRegistryInput, UpdateOciRegistryInput } from "./schemas.js";
import { assertRegistryNameFree, connectionChanges, enabledFilter, foundOr404, listPage, NEWEST_FIRST } from "../rules.js";
import { assertUrlNotForbidden } from "../url.js";

function assertNameFree(db: DbTx, organizationId: string, name: string, exceptId?: string) {
  return assertRegistryNameFree("An OCI registry", name, exceptId, (where) =>
    db.ociRegistry.findFirst({ where: { organizationId, ...where }, select: { id: true } }));
}

export function findOciRegistry(db: DbTx, organizationId: string, id: string) {
  return foundOr404(db.ociRegistry.findFirst({ where: { id, organizationId } }), "OCI registry");
}

export function listOciRegistries(db: DbTx, organizationId: string, input: { limit: number; offset: number; enabled?: boolean }) {
  const where: Prisma.OciRegistryWhereInput = { organizationId, ...enabledFilter(input.enabled) };
  return listPage(input, (page) => db.ociRegistry.findMany({ where, orderBy: NEWEST_FIRST, ...page }), () => db.ociRegistry.count({ where }));
}

/** The columns a new tenant's or global OCI registry starts with; the caller checked the input first. */
export function newOciRegistryColumns(secrets: SecretBox, input: CreateOciRegistryInput) {
  return {
    name: input.name,
    description: input.description ?? null,
    url: input.url,
    registryType: input.registryType,
    authType: input.authType,
    credentialSealed: sealCredential(secrets, input.credential),
    verifyTls: input.verifyTls,
    repositories: input.repositories,
    syncIntervalMinutes: input.syncIntervalMinutes,
    enabled: input.enabled,
  };
}

/** `credentialLater`: a registry declared as code (docs/config-as-code.md) may lack its credential until it is set through PATCH. */
export async function createOciRegistry(db: DbTx, secrets: SecretBox, organizationId: string, input: CreateOciRegistryInput, options: { credentialLater?: boolean } = {}) {
  assertUrlNotForbidden(input.url);
  if (!(options.credentialLater && !input.credential)) assertCredentialFits(input.authType, input.credential);
  await assertNameFree(db, organizationId, input.name);
  return db.ociRegistry.create({ data: { organizationId, ...newOciRegistryColumns(secrets, input) } });
}

/** What a tenant's or a global OCI registry starts with again when it points to another server. */
export const FRESH_OCI_STATE = { lastSyncAt: null, lastSyncError: null, lastHealthCheck: null, healthStatus: null } as const;

type OciSettings = Pick<UpdateOciRegistryInput, "description" | "registryType" | "verifyTls" | "enabled" | "repositories" | "syncIntervalMinutes">;

/** The settings an update sets, alike for tenant and global OCI registries; absent ones stay. */
export function ociSettingsChanges(input: UpdateOciRegistryInput): OciSettings {
  const changes: OciSettings = {};
  if (input.description !== undefined) changes.description = input.description;
  if (input.registryType !== undefined) changes.registryType = input.registryType;
  if (input.verifyTls !== undefined) changes.verifyTls = input.verifyTls;
  if (input.enabled !== undefined) changes.enabled = input.enabled;
  if (input.repositories !== undefined) changes.repositories = input.repositories;
  if (input.syncIntervalMinutes !== undefined) changes.syncIntervalMinutes = input.syncIntervalMinutes;
  return changes;
}

export async function updateOciRegistry(db: DbTx, secrets: SecretBox, organizationId: string, input: UpdateOciRegistryInput) {
  const current = await findOciRegistry(db, organizationId, input.id);
  const data: Prisma.OciRegistryUpdateInput = { ...ociSettingsChanges(input) };
  if (input.name !== undefined && input.name !== current.name) {
    await assertNameFree(db, organizationId, input.name, current.id);
    data.name = input.name;
  }
  const connection = connectionChanges(secrets, current, input);
  if (connection.urlChanged) Object.assign(data, FRESH_OCI_STATE);
  return db.ociRegistry.update({ where: { id: current.id }, data: { ...data, ...connection.columns } });
}

export async function setOciRegistryEnabled(db: DbTx, organizationId: string, id: string, enabled: boolean) {
  const current = await findOciRegistry(db, organizationId, id);
  if (current.enabled === enabled) return current;
  return db.ociRegistry.update({ where: { id: current.id }, data: { enabled } });
}

export async function deleteOciRegistry(db: DbTx, organizationId: string, id: string) {
  const current = await findOciRegistry(db, organizationId, id);
  await db.ociRegistry.delete({ where: { id: current.id } });
  return current;
}

export async function listOciSyncHistory(db: DbTx, organizationId: string, input: { id: string; limit: number; offset: number }) {
  const registry = await findOciRegistry(db, organizationId, input.id);
  const where = { registryId: registry.id, organizationId };
  return listPage(input, (page) => db.ociSyncRecord.findMany({ where, orderBy: NEWEST_FIRST, ...page }), () => db.ociSyncRecord.count({ where }));
}
