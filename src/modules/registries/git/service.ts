// Git registry rules. Every query carries the caller's organization, so another tenant's
// registry is simply not found (404).
import type { DbTx } from "../../../db/client.js";
import type { Prisma } from "../../../generated/prisma/client.js";
import type { SecretBox } from "../../../lib/crypto.js";
import { assertCredentialFits, sealCredential } from "./credentials.js";
import type { CreateGitRegistryInput, UpdateGitRegistryInput } from "./schemas.js";
import { assertRegistryNameFree, connectionChanges, enabledFilter, foundOr404, listPage, NEWEST_FIRST } from "../rules.js";
import { assertUrlNotForbidden } from "../url.js";

function assertNameFree(db: DbTx, organizationId: string, name: string, exceptId?: string) {
  return assertRegistryNameFree("A Git registry", name, exceptId, (where) =>
    db.gitRegistry.findFirst({ where: { organizationId, ...where }, select: { id: true } }));
}

export function findGitRegistry(db: DbTx, organizationId: string, id: string) {
  return foundOr404(db.gitRegistry.findFirst({ where: { id, organizationId } }), "Git registry");
}

export function listGitRegistries(db: DbTx, organizationId: string, input: { limit: number; offset: number; enabled?: boolean }) {
  const where: Prisma.GitRegistryWhereInput = { organizationId, ...enabledFilter(input.enabled) };
  return listPage(input, (page) => db.gitRegistry.findMany({ where, orderBy: NEWEST_FIRST, ...page }), () => db.gitRegistry.count({ where }));
}

/** `credentialLater`: a registry declared as code (docs/config-as-code.md) may lack its credential until it is set through PATCH. */
export async function createGitRegistry(db: DbTx, secrets: SecretBox, organizationId: string, input: CreateGitRegistryInput, options: { credentialLater?: boolean } = {}) {
  assertUrlNotForbidden(input.url);
  if (!(options.credentialLater && !input.credential)) assertCredentialFits(input.authType, input.credential);
  await assertNameFree(db, organizationId, input.name);
  return db.gitRegistry.create({
    data: {
      organizationId,
      name: input.name,
      url: input.url,
      branch: input.branch,
      path: input.path,
      authType: input.authType,
      credentialSealed: sealCredential(secrets, input.credential),
      syncIntervalMinutes: input.syncIntervalMinutes,
      enabled: input.enabled,
    },
  });
}

/** The sync state a registry starts with again when it points somewhere else. */
const FRESH_SYNC_STATE = { lastSyncAt: null, lastSyncError: null, lastSyncCommit: null, lastSyncAttemptAt: null } as const;

export async function updateGitRegistry(db: DbTx, secrets: SecretBox, organizationId: string, input: UpdateGitRegistryInput) {
  const current = await findGitRegistry(db, organizationId, input.id);
  const data: Prisma.GitRegistryUpdateInput = {};
  if (input.name !== undefined && input.name !== current.name) {
    await assertNameFree(db, organizationId, input.name, current.id);
    data.name = input.name;
  }
  if (input.path !== undefined) data.path = input.path;
  if (input.syncIntervalMinutes !== undefined) data.syncIntervalMinutes = input.syncIntervalMinutes;
  if (input.enabled !== undefined) data.enabled = input.enabled;

  const connection = connectionChanges(secrets, current, input);
  const branchChanged = input.branch !== undefined && input.branch !== current.branch;
  if (branchChanged) data.branch = input.branch;
  const pointsElsewhere = connection.urlChanged || branchChanged;
  if (pointsElsewhere) Object.assign(data, FRESH_SYNC_STATE);
  const updated = await db.gitRegistry.update({ where: { id: current.id }, data: { ...data, ...connection.columns } });
  return { registry: updated, pointsElsewhere };
}

export async function setGitRegistryEnabled(db: DbTx, organizationId: string, id: string, enabled: boolean) {
  const current = await findGitRegistry(db, organizationId, id);
  if (current.enabled === enabled) return current;
  return db.gitRegistry.update({ where: { id: current.id }, data: { enabled } });
}

export async function deleteGitRegistry(db: DbTx, organizationId: string, id: string) {
  const current = await findGitRegistry(db, organizationId, id);
  // The catalog keeps what was imported (deployments may run it); delete packages explicitly.
  await db.gitRegistry.delete({ where: { id: current.id } });
  return current;
}
