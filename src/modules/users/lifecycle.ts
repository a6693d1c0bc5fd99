// Enable, disable, delete and Super Admin privileges (all Super Admin operations). The single
// operations and the bulk one share `judge` and `apply`, so a rule holds the same either way.
//
// Disabling takes effect at once: credentialsVersion is bumped (older access tokens fail
// their check), every session is revoked (no refresh), and API keys of a disabled creator
// are refused by authentication. Enabling does not bring sessions back; keys work again.
import type { DbTx } from "../../db/client.js";
import type { Principal } from "../../trpc/principal.js";
import { conflict } from "../../trpc/errors.js";
import { LAST_SUPER_ADMIN, lastOwnerMessage, lastOwnerships, otherActiveSuperAdmins } from "./guards.js";
import { getUser } from "./service.js";
import { voidOutstandingTokens } from "./tokens.js";

export type LifecycleAction = "enable" | "disable" | "delete";

interface Subject {
  id: string;
  status: string;
  isSuperAdmin: boolean;
}

export type Verdict = { outcome: "done" } | { outcome: "skipped" | "refused"; message: string };

/**
 * What the action would do to each subject, judged as one set: removing the last active
 * Super Admin or the last owner of an organization is refused even when it takes two items.
 */
export async function judge(db: DbTx, principal: Principal, action: LifecycleAction, subjects: Subject[]): Promise<Map<string, Verdict>> {
  const verdicts = new Map<string, Verdict>();
  const affected = subjects.filter((s) => {
    if (action === "enable" && s.status === "active") verdicts.set(s.id, { outcome: "skipped", message: "User already active" });
    else if (action === "disable" && s.status === "disabled") verdicts.set(s.id, { outcome: "skipped", message: "User already disabled" });
    else if (action !== "enable" && s.id === principal.userId) {
      verdicts.set(s.id, { outcome: "refused", message: `You cannot ${action} your own account` });
    } else return true;
    return false;
  });
  if (action !== "enable" && affected.length > 0) {
    const ids = affected.map((s) => s.id);
    const superAdminsLeft = (await otherActiveSuperAdmins(db, ids)).length;
    const owners = action === "delete" ? await lastOwnerships(db, ids) : [];
    for (const s of affected) {
      if (s.isSuperAdmin && s.status === "active" && superAdminsLeft === 0) {
        verdicts.set(s.id, { outcome: "refused", message: LAST_SUPER_ADMIN });
        continue;
      }
      const orgs = owners.filter((o) => o.userId === s.id).map((o) => o.organization.name);
      if (orgs.length) verdicts.set(s.id, { outcome: "refused", message: lastOwnerMessage(orgs) });
    }
  }
  for (const s of affected) if (!verdicts.has(s.id)) verdicts.set(s.id, { outcome: "done" });
  return verdicts;
}

/** Carries out the action for users already judged "done", set-based. */
export async function apply(db: DbTx, action: LifecycleAction, ids: string[]) {
  if (ids.length === 0) return;
  const now = new Date();
  if (action === "enable") {
    await db.user.updateMany({ where: { id: { in: ids } }, data: { status: "active" } });
    return;
  }
  // Both disable and delete end every way in at once.
  await db.session.updateMany({ where: { userId: { in: ids }, revokedAt: null }, data: { revokedAt: now } });
  await voidOutstandingTokens(db, ids);
  if (action === "disable") {
    await db.user.updateMany({ where: { id: { in: ids } }, data: { status: "disabled", credentialsVersion: { increment: 1 } } });
  } else {
    // Keys of a deleted creator are already refused; revoking them says so in their record.
    await db.apiKey.updateMany({ where: { createdById: { in: ids }, revokedAt: null }, data: { revokedAt: now } });
    await db.user.deleteMany({ where: { id: { in: ids } } });
  }
}

/** One user: a skip or refusal becomes a 409 with the verdict's message. */
export async function changeUser(db: DbTx, principal: Principal, id: string, action: LifecycleAction) {
  const user = await getUser(db, principal, id);
  const verdict = (await judge(db, principal, action, [user])).get(user.id)!;
  if (verdict.outcome !== "done") throw conflict(verdict.message);
  await apply(db, action, [user.id]);
  return action === "delete" ? null : getUser(db, principal, user.id);
}

export async function grantSuperAdmin(db: DbTx, principal: Principal, id: string) {
  const user = await getUser(db, principal, id);
  if (user.isSuperAdmin) throw conflict("User is already a Super Admin");
  await db.user.update({ where: { id: user.id }, data: { isSuperAdmin: true } });
  return getUser(db, principal, user.id);
}

/** Takes effect on the next request: authentication reads isSuperAdmin every time. */
export async function revokeSuperAdmin(db: DbTx, principal: Principal, id: string) {
  const user = await getUser(db, principal, id);
  if (!user.isSuperAdmin) throw conflict("User is not a Super Admin");
  if (user.status === "active" && (await otherActiveSuperAdmins(db, [user.id])).length === 0) throw conflict(LAST_SUPER_ADMIN);
  await db.user.update({ where: { id: user.id }, data: { isSuperAdmin: false } });
  return getUser(db, principal, user.id);
}
