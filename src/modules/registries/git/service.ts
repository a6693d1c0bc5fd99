// Git registry rules. Every query carries the caller's organization, so another tenant's
// registry is simply not found (404).
import type { DbTx } from "../../../db/client.js";
import type { Prisma } from "../../../generated/prisma/client.js";
import type { SecretBox } from "../../../lib/crypto.js";
import { pageOf } from "../../../lib/paging.js";
import { badRequest, conflict, notFound } from "../../../trpc/errors.js";
import { assertCredentialFits, sealCredential } from "./credentials.js";
import type { CreateGitRegistryInput, GitAuthType, UpdateGitRegistryInput } from "./schemas.js";
import { assertUrlNotForbidden } from "../url.js";


/**
 * Names are unique in an organization. Checked first for a clear answer; the unique index
 * still decides between two concurrent requests.
 */
async function assertNameFree(db: DbTx, organizationId: string, name: string, exceptId?: string) {
  const clash = await db.gitRegistry.findFirst({ where: { organizationId, name, ...(exceptId ? { NOT: { id: exceptId } } : {}) }, select: { id: true } });
  if (clash) throw conflict(`A Git registry named "${name}" already exists`);
}

export async function findGitRegistry(db: DbTx, organizationId: string, id: string) {
  const registry = await db.gitRegistry.findFirst({ where: { id, organizationId } });
  if (!registry) throw notFound("Git registry");
  return registry;
}

export async function listGitRegistries(db: DbTx, organizationId: string, input: { limit: number; offset: number; enabled?: boolean }) {
  const where: Prisma.GitRegistryWhereInput = { organizationId, ...(input.enabled === undefined ? {} : { enabled: input.enabled }) };
  const [items, total] = await Promise.all([
    db.gitRegistry.findMany({ where, orderBy: [{ createdAt: "desc" }, { id: "asc" }], skip: input.offset, take: input.limit }),
    db.gitRegistry.count({ where }),
  ]);
  return pageOf(items, total, input.offset);
}

export async function createGitRegistry(db: DbTx, secrets: SecretBox, organizationId: string, input: CreateGitRegistryInput) {
  assertUrlNotForbidden(input.url);
  assertCredentialFits(input.authType, input.credential);
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
  const authType = (input.authType ?? current.authType) as GitAuthType;
  const data: Prisma.GitRegistryUpdateInput = {};
  if (input.name !== undefined && input.name !== current.name) {
    await assertNameFree(db, organizationId, input.name, current.id);
    data.name = input.name;
  }
  if (input.path !== undefined) data.path = input.path;
  if (input.syncIntervalMinutes !== undefined) data.syncIntervalMinutes = input.syncIntervalMinutes;
  if (input.enabled !== undefined) data.enabled = input.enabled;

  const urlChanged = input.url !== undefined && input.url !== current.url;
  const branchChanged = input.branch !== undefined && input.branch !== current.branch;
  if (urlChanged) {
    assertUrlNotForbidden(input.url!);
    // The stored credential was given for one server: pointing it at another one needs the
    // credential again, or anyone allowed to edit the URL could collect it.
    if (authType !== "NONE" && input.credential === undefined && new URL(input.url!).origin !== new URL(current.url).origin) {
      throw badRequest("Invalid input: credential: send the credential again when the URL points to another server");
    }
    data.url = input.url;
  }
  if (branchChanged) data.branch = input.branch;
  if (urlChanged || branchChanged) Object.assign(data, FRESH_SYNC_STATE);

  if (authType === "NONE") {
    assertCredentialFits("NONE", input.credential);
    data.credentialSealed = null;
  } else if (input.credential !== undefined) {
    assertCredentialFits(authType, input.credential);
    data.credentialSealed = sealCredential(secrets, input.credential);
  } else if (authType !== current.authType || current.credentialSealed === null) {
    // A stored BASIC pair is no TOKEN (and the other way round): the type change needs its credential.
    assertCredentialFits(authType, undefined);
  }
  data.authType = authType;
  const updated = await db.gitRegistry.update({ where: { id: current.id }, data });
  return { registry: updated, pointsElsewhere: urlChanged || branchChanged };
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
