// /api/v1/enrollment-requests: the enrollment lobby (docs/admission.md). Devices enrolled with an
// `approval` token wait here: they heartbeat and are visible, but get nothing until approved.
import { z } from "zod";
import { protectedProcedure, router } from "../../trpc/procedures.js";
import { pageOf, pageOutput, pagingInput } from "../../lib/paging.js";
import { deviceAuthCacheOf } from "../../trpc/device-auth.js";
import { actorOf } from "../devices/activity.js";
import { parseSelectorString } from "../devices/labels.js";
import {
  approveManyInput,
  approveOneInput,
  decisionOutput,
  ENROLLMENT_REQUEST_STATES,
  enrollmentRequestOutput,
  rejectManyInput,
  rejectOneInput,
  toEnrollmentRequestDto,
} from "./schemas.js";
import { approveRequests, getEnrollmentRequest, listEnrollmentRequests, rejectRequests, type Decision } from "./service.js";

const TAG = "Enrollment";
const audit = { entity: "enrollment_request" };

/** The audit entry names every decided request and device. */
function noted(ctx: { audit: { changes?: unknown; entityId?: string | null } | null }, input: object, decision: Decision) {
  if (ctx.audit) {
    ctx.audit.changes = { ...input, decided: decision.requests, skipped: decision.skipped };
    if (decision.requests.length === 1) ctx.audit.entityId = decision.requests[0].id;
  }
  return decision;
}

export const enrollmentRequestsRouter = router({
  list: protectedProcedure("devices:read")
    .meta({
      openapi: {
        method: "GET",
        path: "/enrollment-requests",
        tags: [TAG],
        summary: "The enrollment lobby: requests of devices to join, newest first",
        description: "`state` may repeat (`?state=pending&state=conflict`); `labels` is a selector `key=value,...` over the labels the devices asked for.",
      },
    })
    .input(z.object({
      ...pagingInput,
      state: z.array(z.enum(ENROLLMENT_REQUEST_STATES)).max(ENROLLMENT_REQUEST_STATES.length).optional(),
      labels: z.string().max(8000).optional().describe("label selector over the requested labels: key=value,key2=value2"),
    }))
    .output(pageOutput(enrollmentRequestOutput))
    .query(async ({ ctx, input }) => {
      const labels = parseSelectorString(input.labels);
      const { rows, total } = await listEnrollmentRequests(ctx.db, ctx.principal.organizationId, { ...input, labels });
      return pageOf(rows.map(toEnrollmentRequestDto), total, input.offset);
    }),

  get: protectedProcedure("devices:read")
    .meta({ openapi: { method: "GET", path: "/enrollment-requests/{id}", tags: [TAG], summary: "Get an enrollment request" } })
    .input(z.object({ id: z.string().uuid() }))
    .output(enrollmentRequestOutput)
    .query(async ({ ctx, input }) => toEnrollmentRequestDto(await getEnrollmentRequest(ctx.db, ctx.principal.organizationId, input.id))),

  approve: protectedProcedure("enrollment:write")
    .meta({
      openapi: {
        method: "POST",
        path: "/enrollment-requests/{id}/approve",
        tags: [TAG],
        summary: "Approve one request: its device is admitted with the labels it asked for plus these",
        description: "409 when the request was already decided.",
      },
      audit: { ...audit, action: "enrollment-requests.approve" },
    })
    .input(approveOneInput)
    .output(decisionOutput)
    .mutation(async ({ ctx, input }) => noted(ctx, input, await approveRequests(ctx.db, actorOf(ctx.principal), ctx.principal.organizationId, { id: input.id }, input.labels))),

  approveMatching: protectedProcedure("enrollment:write")
    .meta({
      openapi: {
        method: "POST",
        path: "/enrollment-requests/approve",
        tags: [TAG],
        summary: "Approve every pending request whose requested labels match the selector",
      },
      audit: { ...audit, action: "enrollment-requests.approve" },
    })
    .input(approveManyInput)
    .output(decisionOutput)
    .mutation(async ({ ctx, input }) =>
      noted(ctx, input, await approveRequests(ctx.db, actorOf(ctx.principal), ctx.principal.organizationId, { labelSelector: input.labelSelector }, input.labels)),
    ),

  reject: protectedProcedure("enrollment:write")
    .meta({
      openapi: {
        method: "POST",
        path: "/enrollment-requests/{id}/reject",
        tags: [TAG],
        summary: "Reject one request: the device's certificate is revoked and the device removed; its agent wipes its identity on its next contact",
        description: "409 when the request was already decided.",
      },
      audit: { ...audit, action: "enrollment-requests.reject" },
    })
    .input(rejectOneInput)
    .output(decisionOutput)
    .mutation(async ({ ctx, input }) => {
      const decision = await rejectRequests(ctx.db, actorOf(ctx.principal), ctx.principal.organizationId, { id: input.id }, input.reason);
      ctx.afterCommit(() => deviceAuthCacheOf(ctx.services).evictDevices(decision.requests.flatMap((r) => (r.deviceId ? [r.deviceId] : []))));
      return noted(ctx, input, decision);
    }),

  rejectMatching: protectedProcedure("enrollment:write")
    .meta({
      openapi: { method: "POST", path: "/enrollment-requests/reject", tags: [TAG], summary: "Reject every pending request whose requested labels match the selector" },
      audit: { ...audit, action: "enrollment-requests.reject" },
    })
    .input(rejectManyInput)
    .output(decisionOutput)
    .mutation(async ({ ctx, input }) => {
      const decision = await rejectRequests(ctx.db, actorOf(ctx.principal), ctx.principal.organizationId, { labelSelector: input.labelSelector }, input.reason);
      ctx.afterCommit(() => deviceAuthCacheOf(ctx.services).evictDevices(decision.requests.flatMap((r) => (r.deviceId ? [r.deviceId] : []))));
      return noted(ctx, input, decision);
    }),
});
