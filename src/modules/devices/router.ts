// /api/v1/devices: list, get, update, delete, activity log, release of the reported-device-id
// claim, add and remove one label. (Certificates live in ./certificates/, telemetry and
// rollback under their own capabilities.)
import { z } from "zod";
import { protectedProcedure, router } from "../../trpc/procedures.js";
import { pageOf, pageOutput, pagingInput } from "../../lib/paging.js";
import { deviceAuthCacheOf } from "../../trpc/device-auth.js";
import { actorOf } from "./activity.js";
import { labelKey, labelsSchema, labelValue, parseSelectorString } from "./labels.js";
import { DEVICE_EVENT_TYPES, deviceEventOutput, deviceOutput, deviceStatus, toDeviceDto, toDeviceEventDto } from "./schemas.js";
import {
  addLabel,
  deleteDevice,
  DEVICE_SORT_FIELDS,
  getDevice,
  listDeviceActivity,
  listDevices,
  releaseClaim,
  removeLabel,
  updateDevice,
} from "./service.js";
import { deviceSystemOf, deviceSystemOutput, listSystemUpdates, systemUpdateOutput } from "./system.js";

const TAG = "Devices";
const audit = { entity: "device" };
const idInput = z.object({ id: z.string().uuid() });

export const devicesRouter = router({
  list: protectedProcedure("devices:read")
    .meta({
      openapi: {
        method: "GET",
        path: "/devices",
        tags: [TAG],
        summary: "List devices",
        description:
          "Filters combine with AND. `status` may repeat (`?status=online&status=error`). `labels` is a label selector " +
          "`key=value,key2=value2` (every pair must match). `search` matches name or reported device id (case-insensitive, substring).",
      },
    })
    .input(
      z.object({
        ...pagingInput,
        status: z.array(deviceStatus).max(5).optional().describe("only devices in these statuses"),
        labels: z.string().max(8000).optional().describe("label selector: key=value,key2=value2"),
        search: z.string().max(200).optional().describe("substring of the name or the reported device id"),
        sort: z.enum(DEVICE_SORT_FIELDS).default("createdAt"),
        order: z.enum(["asc", "desc"]).default("desc"),
      }),
    )
    .output(pageOutput(deviceOutput))
    .query(async ({ ctx, input }) => {
      const labels = parseSelectorString(input.labels);
      const { rows, total } = await listDevices(ctx.services.database.opened.raw, ctx.principal.organizationId, { ...input, labels });
      return pageOf(rows.map(toDeviceDto), total, input.offset);
    }),

  get: protectedProcedure("devices:read")
    .meta({
      openapi: {
        method: "GET", path: "/devices/{id}", tags: [TAG], summary: "Get a device",
        description: "`system`: the operating system the device booted and its last system update (docs/os-updates.md); null for a device without RAUC.",
      },
    })
    .input(idInput)
    .output(deviceOutput.extend({ system: deviceSystemOutput }))
    .query(async ({ ctx, input }) => {
      const device = toDeviceDto(await getDevice(ctx.services.database.opened.raw, ctx.principal.organizationId, input.id));
      return { ...device, system: await deviceSystemOf(ctx.db, ctx.principal.organizationId, input.id) };
    }),

  systemUpdates: protectedProcedure("devices:read")
    .meta({
      openapi: {
        method: "GET", path: "/devices/{id}/system-updates", tags: [TAG], summary: "A device's system updates, newest first",
        description: "Each finished OS update (a RAUC bundle) and its outcome as the agent reported it after the boot: committed, rolled-back with the reason, or failed (docs/os-updates.md).",
      },
    })
    .input(idInput.extend(pagingInput))
    .output(pageOutput(systemUpdateOutput))
    .query(async ({ ctx, input }) => {
      const { rows, total } = await listSystemUpdates(ctx.db, ctx.principal.organizationId, input.id, input);
      return pageOf(rows, total, input.offset);
    }),

  update: protectedProcedure("devices:write")
    .meta({
      openapi: { method: "PATCH", path: "/devices/{id}", tags: [TAG], summary: "Rename a device and/or replace its labels" },
      audit,
    })
    .input(
      idInput.extend({
        name: z.string().trim().min(1).max(200).optional(),
        labels: labelsSchema.optional().describe("the complete new label set (replaces the old one)"),
      }),
    )
    .output(deviceOutput)
    .mutation(async ({ ctx, input: { id, ...changes } }) =>
      toDeviceDto(await updateDevice(ctx.db, actorOf(ctx.principal), ctx.principal.organizationId, id, changes)),
    ),

  delete: protectedProcedure("devices:write")
    .meta({
      openapi: { method: "DELETE", path: "/devices/{id}", tags: [TAG], summary: "Delete a device and revoke its certificates" },
      audit: { ...audit, action: "devices.delete" },
    })
    .input(idInput)
    .output(z.object({ id: z.string().uuid(), deleted: z.literal(true), revokedCertificates: z.number().int() }))
    .mutation(async ({ ctx, input }) => {
      const result = await deleteDevice(ctx.db, ctx.principal.organizationId, input.id);
      deviceAuthCacheOf(ctx.services).evictDevices([input.id]);
      return result;
    }),

  activity: protectedProcedure("devices:read")
    .meta({
      openapi: {
        method: "GET",
        path: "/devices/{id}/activity",
        tags: [TAG],
        summary: "A device's activity log, newest first",
        description: "Enrollment, status changes, label changes, renames, claim releases and certificate events.",
      },
    })
    .input(idInput.extend({ ...pagingInput, type: z.array(z.enum(DEVICE_EVENT_TYPES)).max(DEVICE_EVENT_TYPES.length).optional() }))
    .output(pageOutput(deviceEventOutput))
    .query(async ({ ctx, input }) => {
      const { rows, total } = await listDeviceActivity(ctx.db, ctx.principal.organizationId, input.id, input);
      return pageOf(rows.map(toDeviceEventDto), total, input.offset);
    }),

  releaseClaim: protectedProcedure("devices:write")
    .meta({
      openapi: {
        method: "POST",
        path: "/devices/{id}/release-claim",
        tags: [TAG],
        summary: "Release the device's reported-device-id claim",
        description: "New hardware may then enroll under the same reported device id; this device keeps its record and history. 409 when already released.",
      },
      audit,
    })
    .input(idInput)
    .output(deviceOutput)
    .mutation(async ({ ctx, input }) =>
      toDeviceDto(await releaseClaim(ctx.db, actorOf(ctx.principal), ctx.principal.organizationId, input.id)),
    ),

  addLabel: protectedProcedure("devices:write")
    .meta({
      openapi: { method: "POST", path: "/devices/{id}/labels", tags: [TAG], summary: "Set one label (adds it or changes its value)" },
      audit,
    })
    .input(idInput.extend({ key: labelKey, value: labelValue }))
    .output(deviceOutput)
    .mutation(async ({ ctx, input }) =>
      toDeviceDto(await addLabel(ctx.db, actorOf(ctx.principal), ctx.principal.organizationId, input.id, input.key, input.value)),
    ),

  removeLabel: protectedProcedure("devices:write")
    .meta({
      openapi: { method: "DELETE", path: "/devices/{id}/labels/{key}", tags: [TAG], summary: "Remove one label (404 when the device does not carry it)" },
      audit,
    })
    .input(idInput.extend({ key: labelKey }))
    .output(deviceOutput)
    .mutation(async ({ ctx, input }) =>
      toDeviceDto(await removeLabel(ctx.db, actorOf(ctx.principal), ctx.principal.organizationId, input.id, input.key)),
    ),
});
