// The ownership guard (docs/config-as-code.md): a resource applied as code carries an owner
// mark, and changing or deleting it through the API answers 409 naming the owner, so the
// documents stay the truth. Setting a secret the documents never hold stays open. The
// modules' update and delete procedures call this before their service function.
import type { DbTx } from "../../db/client.js";
import { conflict } from "../../trpc/errors.js";

type Managed = { name: string; managedBy: string | null; managedCommit: string | null } | null;

const SELECT = { name: true, managedBy: true, managedCommit: true } as const;

const LOOKUP = {
  Deployment: (db: DbTx, organizationId: string, id: string) => db.deployment.findFirst({ where: { id, organizationId }, select: SELECT }),
  AlertRule: (db: DbTx, organizationId: string, id: string) => db.alertRule.findFirst({ where: { id, organizationId }, select: SELECT }),
  NotificationTarget: (db: DbTx, organizationId: string, id: string) => db.notificationTarget.findFirst({ where: { id, organizationId }, select: SELECT }),
  Role: (db: DbTx, organizationId: string, id: string) => db.role.findFirst({ where: { id, organizationId }, select: SELECT }),
  GitRegistry: (db: DbTx, organizationId: string, id: string) => db.gitRegistry.findFirst({ where: { id, organizationId }, select: SELECT }),
  OciRegistry: (db: DbTx, organizationId: string, id: string) => db.ociRegistry.findFirst({ where: { id, organizationId }, select: SELECT }),
  ConfigLayer: (db: DbTx, organizationId: string, id: string) => db.configLayer.findFirst({ where: { id, organizationId }, select: SELECT }),
} satisfies Record<string, (db: DbTx, organizationId: string, id: string) => Promise<Managed>>;

export type ManagedKind = keyof typeof LOOKUP;

/**
 * 409 when the resource is managed as code. `input` with only `secretFields` besides its id
 * (a credential, a URL) passes: documents never hold those. A resource not found passes too:
 * the module's own lookup answers the 404.
 */
export async function assertNotManaged(
  db: DbTx, kind: ManagedKind, organizationId: string, id: string,
  change?: { input: Record<string, unknown>; secretFields: string[] },
): Promise<void> {
  if (change) {
    const fields = Object.keys(change.input).filter((k) => k !== "id" && change.input[k] !== undefined);
    if (fields.length > 0 && fields.every((f) => change.secretFields.includes(f))) return;
  }
  const row = await LOOKUP[kind](db, organizationId, id);
  if (!row?.managedBy) return;
  throw conflict(
    `${kind} "${row.name}" is managed as code by ${row.managedBy}${row.managedCommit ? ` (commit ${row.managedCommit})` : ""}: ` +
    "change it in its documents and apply them (POST /organizations/{orgId}/config/apply)",
  );
}
