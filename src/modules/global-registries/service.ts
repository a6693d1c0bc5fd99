// Global OCI registry rules (Super Admin only). Names are unique on the platform. Columns, URL
// and credential rules are the tenant OCI registry's (../registries/oci/service.ts, ../registries/rules.ts).
import type { DbTx } from "../../db/client.js";
import type { Prisma } from "../../generated/prisma/client.js";
import type { SecretBox } from "../../lib/crypto.js";
import { assertCredentialFits } from "../registries/git/credentials.js";
import { FRESH_OCI_STATE, newOciRegistryColumns, ociSettingsChanges } from "../registries/oci/service.js";
import { assertRegistryNameFree, connectionChanges, enabledFilter, foundOr404, listPage } from "../registries/rules.js";
import type { CreateGlobalRegistryInput, UpdateGlobalRegistryInput } from "./schemas.js";
import { assertUrlNotForbidden } from "../registries/url.js";

function assertNameFree(db: DbTx, name: string, exceptId?: string) {
  return assertRegistryNameFree("A global OCI registry", name, exceptId, (where) =>
    db.globalOciRegistry.findFirst({ where, select: { id: true } }));
}

export function findGlobalRegistry(db: DbTx, id: string) {
  return foundOr404(db.globalOciRegistry.findUnique({ where: { id } }), "Global OCI registry");
}

/** In the order of the combined registry list: priority ascending, then oldest first. */
export function listGlobalRegistries(db: DbTx, input: { limit: number; offset: number; enabled?: boolean }) {
  const where: Prisma.GlobalOciRegistryWhereInput = enabledFilter(input.enabled);
  return listPage(
    input,
    (page) => db.globalOciRegistry.findMany({ where, orderBy: [{ priority: "asc" }, { createdAt: "asc" }, { id: "asc" }], ...page }),
    () => db.globalOciRegistry.count({ where }),
  );
}

export async function createGlobalRegistry(db: DbTx, secrets: SecretBox, input: CreateGlobalRegistryInput) {
  assertUrlNotForbidden(input.url);
  assertCredentialFits(input.authType, input.credential);
  await assertNameFree(db, input.name);
  return db.globalOciRegistry.create({
    data: { ...newOciRegistryColumns(secrets, input), mandatory: input.mandatory, priority: input.priority },
  });
}

export async function updateGlobalRegistry(db: DbTx, secrets: SecretBox, input: UpdateGlobalRegistryInput) {
  const current = await findGlobalRegistry(db, input.id);
  const data: Prisma.GlobalOciRegistryUpdateInput = { ...ociSettingsChanges(input) };
  if (input.name !== undefined && input.name !== current.name) {
    await assertNameFree(db, input.name, current.id);
    data.name = input.name;
  }
  if (input.mandatory !== undefined) data.mandatory = input.mandatory;
  if (input.priority !== undefined) data.priority = input.priority;
  const connection = connectionChanges(secrets, current, input);
  if (connection.urlChanged) Object.assign(data, FRESH_OCI_STATE);
  return db.globalOciRegistry.update({ where: { id: current.id }, data: { ...data, ...connection.columns } });
}

export async function deleteGlobalRegistry(db: DbTx, id: string) {
  const current = await findGlobalRegistry(db, id);
  await db.globalOciRegistry.delete({ where: { id: current.id } });
  return current;
}
