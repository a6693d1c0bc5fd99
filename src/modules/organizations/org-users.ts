// The members of one organization, managed from the organization's side with users:write:
// what a tenant administrator may do to people in their tenant (Super Admins: any tenant).
// Platform-wide changes to an account (disable, delete, e-mail) stay on /users (Super Admin).
// Removing members and changing their role go through the members module, so its rules
// (never the last owner, nobody hands out or takes away more than they hold, keys revoked
// on removal) hold here exactly as on /organizations/{orgId}/members.
import { TRPCError } from "@trpc/server";
import type { z } from "zod";
import type { DbTx } from "../../db/client.js";
import type { Services } from "../../services.js";
import { can, type Principal } from "../../trpc/principal.js";
import { conflict, forbidden, notFound } from "../../trpc/errors.js";
import { changeMemberRole, removeMember } from "../members/service.js";
import { assertMayGrant } from "../roles/access.js";
import { findAssignableRole } from "../roles/service.js";
import { issuePasswordReset } from "../users/tokens.js";
import type { itemOutcome } from "../users/schemas.js";
import type { orgUsersBulkInput } from "./schemas.js";
import { getOrganization } from "./service.js";

type Outcome = z.infer<typeof itemOutcome>;

/** A refusal of the single-member rules becomes that item's outcome; anything else aborts. */
function outcomeOf(id: string, err: unknown): Outcome {
  if (!(err instanceof TRPCError) || err.code === "INTERNAL_SERVER_ERROR" || err.code === "SERVICE_UNAVAILABLE") throw err;
  return { id, outcome: err.code === "NOT_FOUND" ? "not_found" : "refused", message: err.message };
}

export async function bulkOrganizationUsers(db: DbTx, services: Services, principal: Principal, input: z.infer<typeof orgUsersBulkInput>) {
  const org = await getOrganization(db, principal, input.id);
  // The procedure requires users:write; changing memberships also needs what the members
  // paths need, so this route is no way around them.
  if (input.action !== "reset-password" && !can(principal, "members:write")) throw forbidden("Missing permission members:write");
  const ids = [...new Set(input.userIds)];
  // A role the caller may not hand out refuses the whole request, like a single assignment.
  const role = input.action === "set-role" ? await findAssignableRole(db, org.id, input.roleId!) : null;
  if (role) assertMayGrant(principal, role.permissions, "assign a role granting");
  const members = new Map(
    (await db.membership.findMany({
      where: { organizationId: org.id, userId: { in: ids } },
      include: { user: { select: { id: true, email: true, name: true, status: true } } },
    })).map((m) => [m.userId, m]),
  );

  const results: Outcome[] = [];
  // Item by item (at most 100): each one is judged against the state the previous ones left,
  // so removing two owners of an organization with two owners removes one and refuses one.
  for (const id of ids) {
    const member = members.get(id);
    if (!member) {
      results.push({ id, outcome: "not_found", message: "User is not a member of this organization" });
      continue;
    }
    try {
      if (input.action === "remove") {
        await removeMember(db, principal, org.id, id);
        await db.session.updateMany({ where: { organizationId: org.id, userId: id, revokedAt: null }, data: { revokedAt: new Date() } });
      } else if (input.action === "set-role") {
        if (member.roleId === role!.id) {
          results.push({ id, outcome: "skipped", message: `User already has the role "${role!.name}"` });
          continue;
        }
        await changeMemberRole(db, principal, org.id, id, role!.id);
      } else {
        if (member.user.status !== "active") throw conflict("User is disabled");
        await issuePasswordReset(db, services, member.user, "reset", principal.userId);
      }
      results.push({ id, outcome: "done" });
    } catch (err) {
      results.push(outcomeOf(id, err));
    }
  }
  const succeeded = results.filter((r) => r.outcome === "done").length;
  return { action: input.action, results, succeeded, failed: results.length - succeeded };
}

/** A member of the organization only: anyone else is a 404 here, whoever they are. */
export async function resetMemberPassword(db: DbTx, services: Services, principal: Principal, organizationId: string, userId: string) {
  const org = await getOrganization(db, principal, organizationId);
  const member = await db.membership.findUnique({
    where: { organizationId_userId: { organizationId: org.id, userId } },
    include: { user: { select: { id: true, email: true, name: true, status: true } } },
  });
  if (!member) throw notFound("User");
  if (member.user.status !== "active") throw conflict("User is disabled; a Super Admin must enable the user first");
  return issuePasswordReset(db, services, member.user, "reset", principal.userId);
}
