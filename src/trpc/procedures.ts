// The procedure builders every router uses. One mechanism each for authentication,
// permissions, tenant scoping, error translation and the audit trail:
//   publicProcedure            no credentials (login, public invitation links)
//   authedProcedure            any authenticated caller (own profile, logout)
//   protectedProcedure(perm)   a caller whose permissions grant `perm`
//   superAdminProcedure        a Super Admin (API keys must also name platform:admin)
import { TRPCError } from "@trpc/server";
import { t } from "./init.js";
import { AuthFailure, authenticate, forgetVerifiedApiKeys, toTrpcError } from "./auth.js";
import { writeAudit, type AuditNote } from "./audit.js";
import type { Response } from "express";
import type { IncomingHttpHeaders } from "node:http";
import type { RequestInfo } from "./context.js";
import { chargeUnprovenCredential, limitCaller } from "./caller-budgets.js";
import { forbidden, translateDatabaseError } from "./errors.js";
import type { Services } from "../services.js";
import type { Permission } from "./permissions.js";
import { can, type Principal } from "./principal.js";
import { traceProcedure } from "./tracing.js";

export const router = t.router;
export const middleware = t.middleware;

/** Database errors with a meaning become 404/409/503; the rest stays internal (masked). */
const translateErrors = t.middleware(async ({ next }) => {
  const result = await next();
  if (!result.ok && result.error.code === "INTERNAL_SERVER_ERROR") {
    const translated = translateDatabaseError(result.error.cause);
    if (translated) return { ...result, error: translated };
  }
  return result;
});

// traceProcedure: a span per procedure when tracing is on (src/lib/tracing).
const base = t.procedure.use(traceProcedure).use(translateErrors);

/**
 * Operations that take no credential. The rate limiter lets a request that presents one
 * through without spending its source address's budget, counting on authentication to
 * charge it if refused; a public operation never looks at it, so it is charged here: an
 * Authorization header buys no way around the per-source budget (enrollment, sign-in,
 * invitation acceptance).
 */
export const publicProcedure = base.use(async ({ ctx, next }) => {
  await chargeUnprovenCredential(ctx.services, ctx.headers, ctx.request.sourceIp, ctx.res);
  return next();
});

/**
 * authenticate() plus the audit entry of a refused credential (which also spends the source
 * address's budget), then the caller's request budget (429 with Retry-After on `res` once spent); throws a TRPCError. Shared by
 * the procedures and the plain express routes (src/http), so both record refusals alike.
 */
export async function authenticateRequest(services: Services, request: RequestInfo, headers: Record<string, unknown>, path: string, res: Response | null): Promise<Principal> {
  try {
    const principal = await authenticate(services, headers as Parameters<typeof authenticate>[1]);
    await limitCaller(services, principal, res);
    return principal;
  } catch (err) {
    if (!(err instanceof AuthFailure)) throw err;
    if (err.actor) {
      await writeAudit(services.prisma, request, null, {
        action: "auth.refused",
        outcome: "denied",
        organizationId: err.actor.organizationId ?? null,
        message: `${path}: ${err.message}`,
        actor: { type: err.actor.type, id: err.actor.id, userId: err.actor.type === "user" ? err.actor.id : null },
      }).catch(() => undefined);
    }
    if (err.code === "UNAUTHORIZED") await chargeUnprovenCredential(services, headers as IncomingHttpHeaders, request.sourceIp, res);
    throw toTrpcError(err);
  }
}

const authenticated = t.middleware(async ({ ctx, path, next }) => {
  const principal = await authenticateRequest(ctx.services, ctx.request, ctx.headers, path, ctx.res);
  return next({ ctx: { principal } });
});

/** Records a permission denial (outside any transaction) and throws 403. */
export async function denyAccess(ctx: { services: Services; request: RequestInfo }, principal: Principal, path: string, message: string): Promise<never> {
  await writeAudit(ctx.services.prisma, ctx.request, principal, {
    action: "permission.denied",
    outcome: "denied",
    message: `${path}: ${message}`,
  }).catch(() => undefined);
  throw forbidden(message);
}
const deny = denyAccess;

class Rollback extends Error {
  constructor(readonly result: unknown) {
    super("rollback");
  }
}

/**
 * Every mutation runs in one interactive transaction together with its audit entry: both
 * commit or neither does. Handlers see the transaction as `ctx.db`, and may refine their
 * entry through `ctx.audit` (null outside audited mutations): the changed fields of an
 * update (see changedFields in audit.ts), an entity id, or the organization concerned.
 */
const auditedMutation = t.middleware(async ({ ctx, type, path, meta, next, getRawInput }) => {
  if (type !== "mutation" || meta?.audit === false) return next({ ctx: { audit: null as AuditNote | null, afterCommit: runNow } });
  const principal = ctx.principal!;
  const audit = meta?.audit || {};
  const note: AuditNote = {};
  const committed: Array<() => void> = [];
  const afterCommit = (effect: () => void) => void committed.push(effect);
  try {
    const outcome = await ctx.services.prisma.$transaction(async (tx) => {
      const result = await next({ ctx: { db: tx, audit: note as AuditNote | null, afterCommit } });
      if (!result.ok) throw new Rollback(result);
      const input = (await getRawInput().catch(() => undefined)) as Record<string, unknown> | undefined;
      const data = (result as { data?: unknown }).data as Record<string, unknown> | undefined;
      const entityId = note.entityId ?? pickId(data) ?? pickId(input);
      await writeAudit(tx, ctx.request, principal, {
        action: audit.action ?? path,
        outcome: "success",
        organizationId: note.organizationId,
        entityType: audit.entity ?? path.split(".")[0],
        entityId,
        changes: note.changes !== undefined ? note.changes : input,
        message: note.message,
      });
      return result;
    });
    // A change may have revoked a key or changed a role: verified keys are checked again.
    forgetVerifiedApiKeys(ctx.services);
    for (const effect of committed) runNow(effect);
    return outcome;
  } catch (err) {
    if (err instanceof Rollback) return err.result as never; // the failed result, passed on as it was
    throw err;
  }
});

/**
 * Effects that must only be seen once the change is stored (events to other processes and
 * realtime clients) are registered with `ctx.afterCommit`; outside a transaction they run at once.
 * An effect that throws is not the caller's failure: the change is already committed.
 */
function runNow(effect: () => void): void {
  try {
    effect();
  } catch {
    // effects are best-effort notifications; the bus logs its own delivery failures
  }
}

function pickId(value: Record<string, unknown> | undefined): string | null {
  if (!value || typeof value !== "object") return null;
  const id = value.id ?? value.deviceId ?? value.userId;
  return typeof id === "string" ? id : null;
}

const authed = base.use(authenticated);

/** Any authenticated caller, whatever their permissions (own profile, logout, ...). */
export const authedProcedure = authed.use(auditedMutation);

export function protectedProcedure(permission: Permission) {
  return authed
    .use(async ({ ctx, path, next }) => {
      if (!can(ctx.principal, permission)) await deny(ctx, ctx.principal, path, `Missing permission ${permission}`);
      return next();
    })
    .use(auditedMutation);
}

/**
 * A signed-in user with a bearer session (tenant switching, password change, ending
 * sessions): an API key is bound to its organization and has no session, so it gets 403.
 */
export const sessionProcedure = authed
  .use(async ({ ctx, path, next }) => {
    if (ctx.principal.kind !== "user" || !ctx.principal.sessionId) {
      await deny(ctx, ctx.principal, path, "This operation needs a signed-in session (Authorization: Bearer); API keys cannot use it");
    }
    return next({ ctx: { principal: ctx.principal as Principal & { sessionId: string } } });
  })
  .use(auditedMutation);

/**
 * 403 unless Super Admin privileges are effective: a Super Admin user, or a key of a Super
 * Admin naming platform:admin (a `*` key is confined to its organization). Shared with the
 * plain express routes (src/http/guarded-route.ts).
 */
export async function assertSuperAdmin(ctx: { services: Services; request: RequestInfo }, principal: Principal, path: string): Promise<void> {
  if (principal.isSuperAdmin) return;
  await deny(ctx, principal, path, principal.kind === "api_key"
    ? "Super Admin required: the key's creator must be a Super Admin and the key must name platform:admin (* does not include it)"
    : "Super Admin required");
}

/** Marked in its meta (`superAdmin: true`) so that tests find every platform operation. */
export const superAdminProcedure = authed
  .meta({ superAdmin: true })
  .use(async ({ ctx, path, next }) => {
    await assertSuperAdmin(ctx, ctx.principal, path);
    return next();
  })
  .use(auditedMutation);

/** Narrowed context type for handlers and services. */
export type AuthedContext = Parameters<Parameters<typeof authed.query>[0]>[0]["ctx"];

export { TRPCError };

/** Agent operations (/agent/*): a device authenticated by a JWT signed with its key. See device-auth.ts. */
export { deviceProcedure, deviceProcedureCheckedByHandler, type DeviceContext } from "./device-auth.js";
