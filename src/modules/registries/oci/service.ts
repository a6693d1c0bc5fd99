// OCI registry rules. Every query carries the caller's organization, so another tenant's
// registry is simply not found (404). Credentials are checked and sealed exactly like the
// Git registries' (../git/credentials.ts).
import type { DbTx } from "../../../db/client.js";
import type { Prisma } from "../../../generated/prisma/client.js";
import type { SecretBox } from "../../../lib/crypto.js";
import { pageOf } from "../../../lib/paging.js";
import { badRequest, conflict, notFound } from "../../../trpc/errors.js";
import { assertCredentialFits, sealCredential } from "../git/credentials.js";
import type { CreateOciRegistryInput, OciAuthType, UpdateOciRegistryInput } from "./schemas.js";
import { assertUrlNotForbidden } from "../url.js";


/** Checked first for a clear answer; the unique index still decides between concurrent requests. */
async function assertNameFree(db: DbTx, organizationId: string, name: string, exceptId?: string) {
  const clash = await db.ociRegistry.findFirst({ where: { organizationId, name, ...(exceptId ? { NOT: { id: exceptId } } : {}) }, select: { id: true } });
  if (clash) throw conflict(`An OCI registry named "${name}" already exists`);
}

export async function findOciRegistry(db: DbTx, organizationId: string, id: string) {
  const registry = await db.ociRegistry.findFirst({ where: { id, organizationId } });
  if (!registry) throw notFound("OCI registry");
  return registry;
}

export async function listOciRegistries(db: DbTx, organizationId: string, input: { limit: number; offset: number; enabled?: boolean }) {
  const where: Prisma.OciRegistryWhereInput = { organizationId, ...(input.enabled === undefined ? {} : { enabled: input.enabled }) };
  const [items, total] = await Promise.all([
    db.ociRegistry.findMany({ where, orderBy: [{ createdAt: "desc" }, { id: "asc" }], skip: input.offset, take: input.limit }),
    db.ociRegistry.count({ where }),
  ]);
  return pageOf(items, total, input.offset);
}

export async function createOciRegistry(db: DbTx, secrets: SecretBox, organizationId: string, input: CreateOciRegistryInput) {
  assertUrlNotForbidden(input.url);
  assertCredentialFits(input.authType, input.credential);
  await assertNameFree(db, organizationId, input.name);
  return db.ociRegistry.create({
    data: {
      organizationId,
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
    },
  });
}

/** What a registry starts with again when it points to another server. */
const FRESH_STATE = { lastSyncAt: null, lastSyncError: null, lastHealthCheck: null, healthStatus: null } as const;

export async function updateOciRegistry(db: DbTx, secrets: SecretBox, organizationId: string, input: UpdateOciRegistryInput) {
  const current = await findOciRegistry(db, organizationId, input.id);
  const authType = (input.authType ?? current.authType) as OciAuthType;
  const data: Prisma.OciRegistryUpdateInput = {};
  if (input.name !== undefined && input.name !== current.name) {
    await assertNameFree(db, organizationId, input.name, current.id);
    data.name = input.name;
  }
  if (input.description !== undefined) data.description = input.description;
  if (input.registryType !== undefined) data.registryType = input.registryType;
  if (input.verifyTls !== undefined) data.verifyTls = input.verifyTls;
  if (input.enabled !== undefined) data.enabled = input.enabled;
  if (input.repositories !== undefined) data.repositories = input.repositories;
  if (input.syncIntervalMinutes !== undefined) data.syncIntervalMinutes = input.syncIntervalMinutes;

  if (input.url !== undefined && input.url !== current.url) {
    assertUrlNotForbidden(input.url);
    // The stored credential was given for one server: another server needs it again.
    if (authType !== "NONE" && input.credential === undefined && new URL(input.url).origin !== new URL(current.url).origin) {
      throw badRequest("Invalid input: credential: send the credential again when the URL points to another server");
    }
    data.url = input.url;
    Object.assign(data, FRESH_STATE);
  }

  if (authType === "NONE") {
    assertCredentialFits("NONE", input.credential);
    data.credentialSealed = null;
  } else if (input.credential !== undefined) {
    assertCredentialFits(authType, input.credential);
    data.credentialSealed = sealCredential(secrets, input.credential);
  } else if (authType !== current.authType || current.credentialSealed === null) {
    assertCredentialFits(authType, undefined);
  }
  data.authType = authType;
  return db.ociRegistry.update({ where: { id: current.id }, data });
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
  const [items, total] = await Promise.all([
    db.ociSyncRecord.findMany({ where, orderBy: [{ createdAt: "desc" }, { id: "asc" }], skip: input.offset, take: input.limit }),
    db.ociSyncRecord.count({ where }),
  ]);
  return pageOf(items, total, input.offset);
}
