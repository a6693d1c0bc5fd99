// /api/v1/remote-sessions: open a session on a device, list, get, close, new stream tickets,
// the shell recording, and the organization's remote-access settings (docs/remote-access.md).
// The streams themselves are WebSockets (./upgrade.ts).
import { z } from "zod";
import { authedProcedure, denyAccess, protectedProcedure, router, type AuthedContext } from "../../trpc/procedures.js";
import { can } from "../../trpc/principal.js";
import { writeAudit } from "../../trpc/audit.js";
import { pageOutput } from "../../lib/paging.js";
import { TRPCError } from "@trpc/server";
import {
  connectOutput, idInput, KIND_PERMISSION, listInput, openInput, openOutput, remoteSessionOutput, toRemoteSessionDto,
} from "./schemas.js";
import { getSession, mayClose, listSessions, newConnection, openSession, policyOf, streamUrlOf, updatePolicy } from "./service.js";
import { AUDIT, AUDIT_ENTITY, endSessionsWhere } from "./lifecycle.js";
import { remoteSignalsOf } from "./signals.js";
import { remoteAccessInput, remoteAccessOutput } from "./settings.js";
import { Prisma } from "../../generated/prisma/client.js";
import { joinTimers } from "./timers.js";
import { runInput, runOutput, runToEnd } from "./run.js";

const TAG = "Remote access";

/**
 * Opens a session for the caller: the kind's own permission, the organization's policy (a
 * refusal by it audited too, outside the rolled-back transaction), the device told at once, its
 * join deadline watched.
 */
async function openAudited(ctx: AuthedContext, input: z.infer<typeof openInput>, path: string) {
  const permission = KIND_PERMISSION[input.kind];
  if (!can(ctx.principal, permission)) await denyAccess(ctx, ctx.principal, path, `Missing permission ${permission}`);
  let opened;
  try {
    opened = await ctx.services.prisma.$transaction(async (tx) => {
      const result = await openSession(tx, ctx.principal, input);
      await writeAudit(tx, ctx.request, ctx.principal, {
        action: AUDIT.requested, outcome: "success", entityType: AUDIT_ENTITY, entityId: result.session.id, changes: input,
      });
      return result;
    });
  } catch (err) {
    if (err instanceof TRPCError && err.code === "CONFLICT") {
      await writeAudit(ctx.services.prisma, ctx.request, ctx.principal, {
        action: AUDIT.refused, outcome: "denied", entityType: AUDIT_ENTITY, entityId: null, changes: input, message: err.message,
      }).catch(() => undefined);
    }
    throw err;
  }
  remoteSignalsOf(ctx.services).publish({ type: "offer", deviceId: opened.session.deviceId });
  joinTimers(ctx.services).watch(opened.session.id, opened.session.joinDeadline);
  return opened;
}

export const remoteSessionsRouter = router({
  open: authedProcedure
    .meta({
      openapi: {
        method: "POST", path: "/remote-sessions", tags: [TAG],
        summary: "Open a remote session on a device (shell, exec, port-forward, file-read, file-write)",
        description:
          "Needs the kind's own permission (remote:shell, remote:exec, remote:port-forward, remote:files-read, remote:files-write; granted only " +
          "when named: no wildcard includes them). 404 for an unknown device; 409 when remote access is off for the organization, the device " +
          "does not match its selector, the device is offline, or a limit is reached; 400 naming the field (reason when required, command, " +
          "target, path). 201 with the pending session and a one-use ticket (30 s) for its stream: open streamUrl with a WebSocket upgrade. " +
          "The device is told at once (its long-poll) and must join within the organization's joinTimeoutSeconds.",
      },
      successStatus: 201,
      // Audited here, not by the procedure's transaction: a refusal by policy is kept too (outside the rolled-back one).
      audit: false,
    })
    .input(openInput)
    .output(openOutput)
    .mutation(async ({ ctx, input, path }) => {
      const { session, connectionId, ticket, ticketExpiresAt } = await openAudited(ctx, input, path);
      return {
        session: toRemoteSessionDto(session), connectionId, ticket, ticketExpiresAt: ticketExpiresAt.toISOString(), streamUrl: streamUrlOf(session.id, ticket),
      };
    }),

  run: authedProcedure
    .meta({
      openapi: {
        method: "POST", path: "/remote-sessions/run", tags: [TAG],
        summary: "Run one command on a device and answer its exit code, stdout and stderr",
        description:
          "For clients without a WebSocket (MCP, scripts): an exec session like POST /remote-sessions opens (remote:exec, the organization's " +
          "settings and limits, the device's own switches, audit), whose stream the service reads itself. stdin, when given, is sent and then " +
          "closed. The answer comes when the command ends: the device stops it at timeoutSeconds (exit code 124, timedOut). stdout and stderr " +
          "are answered up to 1 MiB each (UTF-8; truncated says more was written, stdoutBytes and stderrBytes count it all). 404 for an unknown " +
          "device; 409 when remote access is off, the device is offline or a limit is reached; 400 naming the field.",
      },
      audit: false, // the session's own entries (requested, started, ended) say it all
    })
    .input(runInput)
    .output(runOutput.extend({ session: remoteSessionOutput }))
    .mutation(async ({ ctx, input, path }) => {
      const opened = await openAudited(ctx, { deviceId: input.deviceId, kind: "exec", command: input.command, tty: false, timeoutSeconds: input.timeoutSeconds, reason: input.reason }, path);
      const { session } = opened;
      // the device must join first, then has timeoutSeconds; a little more for its last words
      const limitMs = Math.max(0, session.joinDeadline.getTime() - Date.now()) + input.timeoutSeconds * 1000 + 15_000;
      const result = await runToEnd(ctx.services, session.id, streamUrlOf(session.id, opened.ticket), input.stdin, limitMs);
      return { ...result, session: toRemoteSessionDto(await getSession(ctx.services.prisma, ctx.principal.organizationId, session.id)) };
    }),

  list: protectedProcedure("remote:read")
    .meta({
      openapi: {
        method: "GET", path: "/remote-sessions", tags: [TAG], summary: "List remote sessions, newest first",
        description: "Filters deviceId, userId, state (pending, active, ended) and kind combine with AND.",
      },
    })
    .input(listInput)
    .output(pageOutput(remoteSessionOutput))
    .query(({ ctx, input }) => listSessions(ctx.services.prisma, ctx.principal.organizationId, input)),

  settings: protectedProcedure("remote:read")
    .meta({
      openapi: {
        method: "GET", path: "/remote-sessions/settings", tags: [TAG], summary: "The organization's remote-access settings (with defaults)",
      },
    })
    .input(z.object({}).optional())
    .output(remoteAccessOutput)
    .query(({ ctx }) => policyOf(ctx.services.prisma, ctx.principal.organizationId)),

  updateSettings: protectedProcedure("remote:manage")
    .meta({
      openapi: {
        method: "PUT", path: "/remote-sessions/settings", tags: [TAG], summary: "Change the organization's remote-access settings",
        description: "Fields not sent keep their values. Needs remote:manage (granted only when named).",
      },
      audit: { entity: "organization", action: "remote-sessions.settings" },
    })
    .input(remoteAccessInput)
    .output(remoteAccessOutput)
    .mutation(async ({ ctx, input }) => {
      const { before, after } = await updatePolicy(ctx.db, ctx.principal.organizationId, input);
      ctx.audit!.entityId = ctx.principal.organizationId;
      ctx.audit!.changes = Object.fromEntries(
        Object.keys(input).filter((k) => JSON.stringify(before[k as keyof typeof before]) !== JSON.stringify(after[k as keyof typeof after]))
          .map((k) => [k, { from: before[k as keyof typeof before], to: after[k as keyof typeof after] }]),
      );
      return after;
    }),

  get: protectedProcedure("remote:read")
    .meta({ openapi: { method: "GET", path: "/remote-sessions/{id}", tags: [TAG], summary: "Get a remote session" } })
    .input(idInput)
    .output(remoteSessionOutput)
    .query(async ({ ctx, input }) => toRemoteSessionDto(await getSession(ctx.services.prisma, ctx.principal.organizationId, input.id))),

  close: authedProcedure
    .meta({
      openapi: {
        method: "POST", path: "/remote-sessions/{id}/close", tags: [TAG], summary: "Close a remote session",
        description: "One's own session needs nothing more; another person's needs remote:manage (ended force-closed). Closing an ended session changes nothing.",
      },
      audit: false, // the session's own "ended" entry says who closed it and why
    })
    .input(idInput)
    .output(remoteSessionOutput)
    .mutation(async ({ ctx, input, path }) => {
      const session = await getSession(ctx.services.prisma, ctx.principal.organizationId, input.id);
      if (!mayClose(ctx.principal, session)) await denyAccess(ctx, ctx.principal, path, "Closing another person's remote session needs remote:manage");
      const reason = session.userId === ctx.principal.userId ? "closed-by-user" : "force-closed";
      const actor = { type: ctx.principal.kind, id: ctx.principal.apiKeyId ?? ctx.principal.userId, userId: ctx.principal.userId };
      await endSessionsWhere(ctx.services, Prisma.sql`s."id" = ${session.id}::uuid`, reason, actor,
        { message: reason === "force-closed" ? "the session was closed by an administrator" : "closed by its user" }, ctx.request);
      return toRemoteSessionDto(await getSession(ctx.services.prisma, ctx.principal.organizationId, input.id));
    }),

  ticket: authedProcedure
    .meta({
      openapi: {
        method: "POST", path: "/remote-sessions/{id}/tickets", tags: [TAG], summary: "A one-use ticket for a stream of one's own session",
        description:
          "port-forward: a new stream (one per TCP connection), offered to the device at once. Other kinds: a new ticket for the session's " +
          "one stream while it is not connected yet (409 once it is). Only the person who opened the session; the kind's permission.",
      },
      successStatus: 201,
      audit: false, // a ticket changes nothing a person did; the session's own entries say who reached what
    })
    .input(idInput)
    .output(connectOutput)
    .mutation(async ({ ctx, input }) => {
      const result = await ctx.services.prisma.$transaction((tx) => newConnection(tx, ctx.principal, input.id));
      if (result.offered) remoteSignalsOf(ctx.services).publish({ type: "offer", deviceId: result.session.deviceId });
      return {
        connectionId: result.connectionId, ticket: result.ticket, ticketExpiresAt: result.ticketExpiresAt.toISOString(),
        streamUrl: streamUrlOf(input.id, result.ticket),
      };
    }),
});
