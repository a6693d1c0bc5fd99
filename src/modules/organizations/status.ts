// Organization status moves (Super Admin). Nothing of the organization is deleted by any
// of them: suspended and disabled organizations only stop their keys and users at
// authentication (src/trpc/auth.ts), and enabling brings everything back.
//
//   enable    suspended | disabled | pending -> active
//   suspend   active | pending               -> suspended   (temporary: billing, abuse review)
//   disable   active | suspended | pending   -> disabled    (spec op 3)
// Asking for the status the organization already has is a conflict (409), as the spec
// writes for the second disable; suspending a disabled organization is refused too, since
// it would quietly weaken the stronger state.
import type { DbTx } from "../../db/client.js";
import type { Principal } from "../../trpc/principal.js";
import { conflict } from "../../trpc/errors.js";
import { getOrganization, statusChangeData } from "./service.js";

type Target = "active" | "suspended" | "disabled";

const ALREADY: Record<Target, string> = {
  active: "Organization already active",
  suspended: "Organization already suspended",
  disabled: "Organization already disabled",
};

export async function changeOrganizationStatus(db: DbTx, principal: Principal, id: string, target: Target, reason?: string) {
  const org = await getOrganization(db, principal, id);
  if (org.status === target) throw conflict(ALREADY[target]);
  if (target === "suspended" && org.status === "disabled") {
    throw conflict("Organization is disabled; enable it before suspending it");
  }
  // Conditional on the status read above: two concurrent moves cannot both succeed.
  const moved = await db.organization.updateMany({
    where: { id: org.id, status: org.status },
    data: statusChangeData(target, principal, reason),
  });
  if (moved.count !== 1) throw conflict("Organization status changed meanwhile; read it again");
  return db.organization.findUniqueOrThrow({ where: { id: org.id } });
}
