// What a caller may hand out. Roles, API keys and invitations all pass through here, so
// nobody can give a key, a member or a custom role more than they may do themselves: that
// is what keeps an admin from minting an owner, or a narrow key from minting a wide one.
import { forbidden } from "../../trpc/errors.js";
import { ALL_PERMISSIONS, grants } from "../../trpc/permissions.js";
import { can, type Principal } from "../../trpc/principal.js";

const PLATFORM = "platform:admin";

/**
 * Refuses (403) when `requested` grants any catalogue permission the caller does not hold.
 * `*` and `<resource>:*` expand to every catalogue key they cover.
 *
 * `platform:admin` is special: it is effective only when the key's creator is a Super Admin
 * (src/trpc/auth.ts), so a `*` of an owner is safe to hand on; naming it explicitly
 * (`platform:admin`, `platform:*`) is reserved to Super Admins.
 */
export function assertMayGrant(principal: Principal, requested: Iterable<string>, what = "grant") {
  for (const entry of requested) {
    if ((entry === PLATFORM || entry === "platform:*") && !principal.isSuperAdmin) {
      throw forbidden(`Only a Super Admin may ${what} ${entry}`);
    }
    for (const permission of ALL_PERMISSIONS) {
      if (permission === PLATFORM || !grants([entry], permission)) continue;
      if (!can(principal, permission)) {
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
