// What a caller may hand out. Roles, API keys and invitations all pass through here, so
// nobody can give a key, a member or a custom role more than they may do themselves: that
// is what keeps an admin from minting an owner, or a narrow key from minting a wide one.
import { forbidden } from "../../trpc/errors.js";
import { ALL_PERMISSIONS, grants, ORGANIZATION_PERMISSIONS, PLATFORM_ADMIN, REMOTE_NAMED_PERMISSIONS } from "../../trpc/permissions.js";
import { can, type Principal } from "../../trpc/principal.js";

/**
 * Refuses (403) when `requested` grants any catalogue permission the caller does not hold.
 * `*` and `<resource>:*` expand to every organization permission they cover.
 *
 * `platform:admin` is never part of a wildcard (src/trpc/permissions.ts): it is granted only
 * by naming it, and only a caller with effective Super Admin privileges may name it. A `*`
 * is therefore safe to hand on, whoever hands it: it stays inside the key's organization.
 *
 * The remote-access permissions are no wildcard's either (docs/remote-access.md): a `*` key
 * cannot open a shell. Handing them on is member administration, though, so what counts there
 * is the person behind the call: an owner's `*` key may still make an administrator (whose
 * role names them) because its creator's role names them too, and a Super Admin may hand them
 * on in a tenant (make its owner again), an explicit and audited act. A key never uses them
 * itself without naming them.
 */
const REMOTE_NAMED: ReadonlySet<string> = new Set(REMOTE_NAMED_PERMISSIONS);

/** The person behind the call (a user's role; an API key's creator's, its last set) holds it, or is a Super Admin. */
function personMayHandOn(principal: Principal, permission: string): boolean {
  const person = principal.permissionSets[principal.permissionSets.length - 1];
  return can(principal, PLATFORM_ADMIN) || (person !== undefined && grants(person, permission));
}

export function assertMayGrant(principal: Principal, requested: Iterable<string>, what = "grant") {
  for (const entry of requested) {
    if (entry === PLATFORM_ADMIN && !can(principal, PLATFORM_ADMIN)) {
      throw forbidden(`Only a Super Admin may ${what} ${PLATFORM_ADMIN}`);
    }
    for (const permission of ORGANIZATION_PERMISSIONS) {
      if (!grants([entry], permission)) continue;
      if (!can(principal, permission) && !(REMOTE_NAMED.has(permission) && personMayHandOn(principal, permission))) {
        const named = entry === "*" ? "every permission (*)" : entry.endsWith(":*") ? `every ${entry.slice(0, -2)} permission (${entry})` : entry;
        throw forbidden(`You may not ${what} ${named}: it includes ${permission}, which you do not hold`);
      }
    }
  }
}

/**
 * The entries of `next` that grant something `current` did not: what an update adds. Only
 * those are checked, so narrowing a key or re-sending its unchanged list never needs more
 * rights than the caller has.
 */
export function addedPermissions(current: readonly string[], next: readonly string[]): string[] {
  return next.filter((entry) => ALL_PERMISSIONS.some((p) => grants([entry], p) && !grants(current, p)));
}
