// /api/v1/device-actions: act on one device (reboot, restart/stop/start an application,
// re-check health, restart the agent, renew its certificate now, collect diagnostics).
// actions:write creates them; the kinds that change what runs (DISRUPTIVE_KINDS) need
// actions:disruptive as well, which no read permission implies. The bundle's download is a
// plain route (bundle-route.ts).
import { z } from "zod";
import { protectedProcedure, router } from "../../trpc/procedures.js";
import { pageOf, pageOutput, pagingInput } from "../../lib/paging.js";
import { requireDisruptive } from "./disruptive.js";
import { actionOutput, createActionInput, listActionsInput } from "./schemas.js";
import { cancelAction, createAction, getAction, listActions } from "./service.js";

const TAG = "Device actions";
const audit = { entity: "device_action" };
const idInput = z.object({ id: z.string().uuid() });

export const deviceActionsRouter = router({
  create: protectedProcedure("actions:write")
    .meta({
      openapi: {
        method: "POST", path: "/device-actions", tags: [TAG],
        summary: "Act on one device: reboot, restart/stop/start an application, check health, restart the agent, renew its certificate, collect diagnostics",
        description:
          "The device takes it with its next heartbeat and runs it at most once. reboot, restart-app, stop-app, start-app and restart-agent " +
          "need actions:disruptive as well (403 without). restart-app, stop-app and start-app name the deployment (400 when the device is not told to run it). " +
          "A lease on the device defers reboot, restart-app, stop-app and restart-agent until it ends (state deferred, deferredUntil, deferredBy); " +
          "an action the device has not run by expiresAt expires. docs/actions.md.",
      },
      successStatus: 201,
      audit: { ...audit, action: "device-actions.create" },
    })
    .input(createActionInput)
    .output(actionOutput)
    .mutation(async ({ ctx, input, path }) => {
      await requireDisruptive(ctx, input.kind, path);
      const action = await createAction(ctx.db, ctx.principal, input);
      if (ctx.audit) {
        ctx.audit.entityId = action.id;
        ctx.audit.message = `${input.kind} on device ${action.deviceName}${input.reason ? `: ${input.reason}` : ""}`;
      }
      return action;
    }),

  list: protectedProcedure("actions:read")
    .meta({ openapi: { method: "GET", path: "/device-actions", tags: [TAG], summary: "List device actions, newest first", description: "Filters combine with AND; `state` and `kind` may repeat." } })
    .input(listActionsInput.extend(pagingInput))
    .output(pageOutput(actionOutput))
    .query(async ({ ctx, input }) => {
      const { rows, total } = await listActions(ctx.db, ctx.principal.organizationId, input);
      return pageOf(rows, total, input.offset);
    }),

  get: protectedProcedure("actions:read")
    .meta({ openapi: { method: "GET", path: "/device-actions/{id}", tags: [TAG], summary: "Get a device action: its state, the device's message and result, a diagnostics bundle" } })
    .input(idInput)
    .output(actionOutput)
    .query(({ ctx, input }) => getAction(ctx.db, ctx.principal.organizationId, input.id)),

  cancel: protectedProcedure("actions:write")
    .meta({
      openapi: {
        method: "POST", path: "/device-actions/{id}/cancel", tags: [TAG], summary: "Cancel an action the device has not begun",
        description: "While pending (not handed to the device yet) or deferred by a lease; 409 naming the state otherwise.",
      },
      audit: { ...audit, action: "device-actions.cancel" },
    })
    .input(idInput)
    .output(actionOutput)
    .mutation(({ ctx, input }) => cancelAction(ctx.db, ctx.principal.organizationId, input.id)),
});
