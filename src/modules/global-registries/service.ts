// Global OCI registry rules (Super Admin only). Names are unique on the platform. Credentials
// are checked and sealed like every registry credential (../registries/git/credentials.ts).
import type { DbTx } from "../../db/client.js";
import type { Prisma } from "../../generated/prisma/client.js";
import type { SecretBox } from "../../lib/crypto.js";
import { pageOf } from "../../lib/paging.js";
import { badRequest, conflict, notFound } from "../../trpc/errors.js";
import { assertCredentialFits, sealCredential } from "../registries/git/credentials.js";
import type { OciAuthType } from "../registries/oci/schemas.js";
import type { CreateGlobalRegistryInput, UpdateGlobalRegistryInput } from "./schemas.js";
import { assertUrlNotForbidden } from "../registries/url.js";

async function assertNameFree(db: DbTx, name: string, exceptId?: string) {
  const clash = await db.globalOciRegistry.findFirst({ where: { name, ...(exceptId ? { NOT: { id: exceptId } } : {}) }, select: { id: true } });
  if (clash) throw conflict(`A global OCI registry named "${name}" already exists`);
}

export async function findGlobalRegistry(db: DbTx, id: string) {
  const registry = await db.globalOciRegistry.findUnique({ where: { id } });
  if (!registry) throw notFound("Global OCI registry");
  return registry;
}

/** In the order of the combined registry list: priority ascending, then oldest first. */
export async function listGlobalRegistries(db: DbTx, input: { limit: number; offset: number; enabled?: boolean }) {
  const where: Prisma.GlobalOciRegistryWhereInput = input.enabled === undefined ? {} : { enabled: input.enabled };
  const [items, total] = await Promise.all([
    db.globalOciRegistry.findMany({ where, orderBy: [{ priority: "asc" }, { createdAt: "asc" }, { id: "asc" }], skip: input.offset, take: input.limit }),
    db.globalOciRegistry.count({ where }),
  ]);
  return pageOf(items, total, input.offset);
}

export async function createGlobalRegistry(db: DbTx, secrets: SecretBox, input: CreateGlobalRegistryInput) {
  assertUrlNotForbidden(input.url);
  assertCredentialFits(input.authType, input.credential);
  await assertNameFree(db, input.name);
  return db.globalOciRegistry.create({
    data: {
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
      mandatory: input.mandatory,
      priority: input.priority,
    },
  });
}

export async function updateGlobalRegistry(db: DbTx, secrets: SecretBox, input: UpdateGlobalRegistryInput) {
  const current = await findGlobalRegistry(db, input.id);
  const authType = (input.authType ?? current.authType) as OciAuthType;
  const data: Prisma.GlobalOciRegistryUpdateInput = {};
  if (input.name !== undefined && input.name !== current.name) {
    await assertNameFree(db, input.name, current.id);
    data.name = input.name;
  }
  for (const key of ["description", "registryType", "verifyTls", "enabled", "repositories", "syncIntervalMinutes", "mandatory", "priority"] as const) {
    if (input[key] !== undefined) (data as Record<string, unknown>)[key] = input[key];
  }
  if (input.url !== undefined && input.url !== current.url) {
    assertUrlNotForbidden(input.url);
    if (authType !== "NONE" && input.credential === undefined && new URL(input.url).origin !== new URL(current.url).origin) {
      throw badRequest("Invalid input: credential: send the credential again when the URL points to another server");
    }
    Object.assign(data, { url: input.url, lastSyncAt: null, lastSyncError: null, lastHealthCheck: null, healthStatus: null });
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
  return db.globalOciRegistry.update({ where: { id: current.id }, data });
}

export async function deleteGlobalRegistry(db: DbTx, id: string) {
  const current = await findGlobalRegistry(db, id);
  await db.globalOciRegistry.delete({ where: { id: current.id } });
  return current;
}
