// The second permission of the kinds that change what runs on a device (DISRUPTIVE_KINDS):
// one action (device-actions/router.ts) and a job over many devices (jobs/router.ts) refuse
// alike, with an audited 403 naming actions:disruptive.
import type { Services } from "../../services.js";
import type { RequestInfo } from "../../trpc/context.js";
import { denyAccess } from "../../trpc/procedures.js";
import { can, type Principal } from "../../trpc/principal.js";
import { DISRUPTIVE_KINDS, type ActionKind } from "./kinds.js";

export async function requireDisruptive(ctx: { services: Services; request: RequestInfo; principal: Principal }, kind: ActionKind, path: string): Promise<void> {
  if (DISRUPTIVE_KINDS.includes(kind) && !can(ctx.principal, "actions:disruptive")) {
    await denyAccess(ctx, ctx.principal, path, `Missing permission actions:disruptive (${kind} changes what runs on the device)`);
  }
}
