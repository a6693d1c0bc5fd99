// One action over a list of users, with an outcome per item. Judged as a set (see
// lifecycle.ts) and carried out in a few statements, inside the request's transaction.
import type { z } from "zod";
import type { DbTx } from "../../db/client.js";
import type { Principal } from "../../trpc/principal.js";
import type { bulkUsersInput, itemOutcome } from "./schemas.js";
import { apply, judge } from "./lifecycle.js";
import { visibleUsers } from "./service.js";

export async function bulkUsers(db: DbTx, principal: Principal, input: z.infer<typeof bulkUsersInput>) {
  const ids = [...new Set(input.userIds)];
  const users = await db.user.findMany({
    where: { id: { in: ids }, ...visibleUsers(principal) },
    select: { id: true, status: true, isSuperAdmin: true },
  });
  const verdicts = await judge(db, principal, input.action, users);
  const results: z.infer<typeof itemOutcome>[] = ids.map((id) => {
    const verdict = verdicts.get(id);
    if (!verdict) return { id, outcome: "not_found", message: "User not found" };
    return verdict.outcome === "done" ? { id, outcome: "done" } : { id, outcome: verdict.outcome, message: verdict.message };
  });
  const done = results.filter((r) => r.outcome === "done").map((r) => r.id);
  await apply(db, input.action, done);
  return { action: input.action, results, succeeded: done.length, failed: results.length - done.length };
}
