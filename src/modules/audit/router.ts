// The audit log API: read-only (no update or delete exists), plus "record authentication
// event". The streamed export (POST /audit/export) is a plain express route:
// src/modules/audit/export-route.ts.
import { z } from "zod";
import { authedProcedure, protectedProcedure, router } from "../../trpc/procedures.js";
import { notFound } from "../../trpc/errors.js";
import { pageOutput, pagingInput } from "../../lib/paging.js";
import { auditEntryOutput, auditFilterFields, OUTCOMES } from "./schemas.js";
import { isoInstant } from "../../lib/iso-time.js";
import { auditStats, auditWhere, getAuditEntry, recordAuthEvent, searchAudit } from "./service.js";

const TAG = "Audit";

const countMap = (keys: readonly string[]) => z.object(Object.fromEntries(keys.map((k) => [k, z.number().int()])));

const statsOutput = z.object({
  total: z.number().int(),
  byOutcome: countMap(OUTCOMES),
  byActorType: countMap(["user", "api_key", "device", "system"]),
  topActions: z.array(z.object({ action: z.string(), count: z.number().int() })),
  topEntityTypes: z.array(z.object({ entityType: z.string(), count: z.number().int() })),
  byDay: z.array(z.object({ date: z.string(), count: z.number().int() })).describe("the requested range, or the last 30 days"),
  from: z.string().datetime().nullable(),
  to: z.string().datetime().nullable(),
});

export const auditRouter = router({
  search: protectedProcedure("audit:read")
    .meta({ openapi: { method: "GET", path: "/audit", tags: [TAG], summary: "Search the audit log (newest first)" } })
    .input(z.object({ ...auditFilterFields, ...pagingInput }))
    .output(pageOutput(auditEntryOutput))
    .query(({ ctx, input }) => searchAudit(ctx.db, ctx.principal, input)),

  stats: protectedProcedure("audit:read")
    .meta({ openapi: { method: "GET", path: "/audit/stats", tags: [TAG], summary: "Audit log statistics" } })
    .input(z.object({ organizationId: auditFilterFields.organizationId, from: isoInstant.optional(), to: isoInstant.optional() }))
    .output(statsOutput)
    .query(({ ctx, input }) => auditStats(ctx.db, ctx.principal, input)),

  recordAuthEvent: authedProcedure
    .meta({
      openapi: {
        method: "POST",
        path: "/audit/auth-events",
        tags: [TAG],
        summary: "Record an authentication event",
        description: "A client reports an authentication event (sign-in at a front end, MFA, SSO failure...). It is stored as action `auth.event.<eventType>` about the caller; only a Super Admin may name another userId or organizationId.",
      },
      successStatus: 201,
      audit: false, // the event is the entry
    })
    .input(z.object({
      eventType: z.string().regex(/^[a-z][a-z0-9_.-]{0,62}$/, "lower-case letters, digits, _ . -"),
      outcome: z.enum(OUTCOMES).default("success"),
      userId: z.string().uuid().optional(),
      organizationId: z.string().uuid().optional(),
      message: z.string().max(1000).optional(),
      details: z.record(z.string(), z.unknown()).optional(),
    }))
    .output(auditEntryOutput)
    .mutation(({ ctx, input }) => recordAuthEvent(ctx.db, ctx.request, ctx.principal, input)),

  byEntity: protectedProcedure("audit:read")
    .meta({ openapi: { method: "GET", path: "/audit/entity/{entityType}/{entityId}", tags: [TAG], summary: "Audit entries of one entity" } })
    .input(z.object({ entityType: z.string().min(1).max(100), entityId: z.string().min(1).max(200), ...pagingInput }))
    .output(pageOutput(auditEntryOutput))
    .query(({ ctx, input }) => searchAudit(ctx.db, ctx.principal, input)),

  byUser: protectedProcedure("audit:read")
    .meta({ openapi: { method: "GET", path: "/audit/user/{userId}", tags: [TAG], summary: "Audit entries of one user (as actor or behind a key)" } })
    .input(z.object({ userId: z.string().uuid(), ...pagingInput }))
    .output(pageOutput(auditEntryOutput))
    .query(async ({ ctx, input }) => {
      // Another tenant's user is a 404 unless they acted here (a switched-in Super Admin).
      const known = ctx.principal.isSuperAdmin
        ? await ctx.db.user.findUnique({ where: { id: input.userId }, select: { id: true } })
        : (await ctx.db.membership.findUnique({ where: { organizationId_userId: { organizationId: ctx.principal.organizationId, userId: input.userId } } }))
          ?? (await ctx.db.auditEntry.findFirst({ where: auditWhere(ctx.principal, { userId: input.userId }), select: { id: true } }));
      if (!known) throw notFound("User");
      return searchAudit(ctx.db, ctx.principal, input);
    }),

  get: protectedProcedure("audit:read")
    .meta({ openapi: { method: "GET", path: "/audit/{id}", tags: [TAG], summary: "One audit entry" } })
    .input(z.object({ id: z.string().uuid() }))
    .output(auditEntryOutput)
    .query(({ ctx, input }) => getAuditEntry(ctx.db, ctx.principal, input.id)),
});
