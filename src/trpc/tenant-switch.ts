// Ending a tenant switch: the one place that sends a session back to its home organization.
// Part of authentication, which decides the organization a session acts in: auth.ts ends a
// switch that has expired or whose target can no longer be used; the tenant module (return,
// a new switch replacing an old one) and moving a session to another of its organizations
// (src/modules/auth) end theirs here too.
import type { Db, DbTx } from "../db/client.js";
import { writeAudit } from "./audit.js";

export type SwitchEndReason = "returned" | "expired" | "replaced" | "access_lost";

export interface OpenSwitch {
  id: string;
  userId: string;
  sessionId: string | null;
  fromOrgId: string | null;
  toOrgId: string;
}

/**
 * Closes the switch if it is still open (a conditional update, so concurrent requests end it
 * once) and moves its session back home unless a new switch takes over ("replaced").
 * Returns false when someone else ended it first.
 */
export async function endTenantSwitch(db: DbTx, sw: OpenSwitch, reason: SwitchEndReason, now = new Date()): Promise<boolean> {
  const ended = await db.tenantSwitch.updateMany({
    where: { id: sw.id, endedAt: null },
    data: { endedAt: now, endReason: reason, ...(reason === "returned" ? { returnedAt: now } : {}) },
  });
  if (ended.count === 0) return false;
  if (sw.sessionId && reason !== "replaced") {
    await db.session.updateMany({ where: { id: sw.sessionId, organizationId: sw.toOrgId }, data: { organizationId: sw.fromOrgId } });
  }
  return true;
}

/** Ends a switch on its own (expiry, lost access), with its audit entry, outside any request transaction. */
export async function endSwitchAutomatically(prisma: Db, sw: OpenSwitch, reason: "expired" | "access_lost") {
  await prisma.$transaction(async (tx) => {
    if (!(await endTenantSwitch(tx, sw, reason))) return;
    await writeAudit(tx, null, null, {
      action: "tenant.expire",
      outcome: "success",
      organizationId: sw.toOrgId,
      entityType: "tenant_switch",
      entityId: sw.id,
      message: reason === "expired" ? "tenant switch expired" : "tenant switch ended: the target organization can no longer be used",
      actor: { type: "system", id: null, userId: sw.userId },
    });
  });
}
