// /api/v1/preauthorized-devices: the factory's list of devices admitted on sight (docs/admission.md).
import { z } from "zod";
import { protectedProcedure, router } from "../../trpc/procedures.js";
import { pageOf, pageOutput, pagingInput } from "../../lib/paging.js";
import { importInput, preauthorizedOutput, toPreauthorizedDto } from "./schemas.js";
import { deletePreauthorized, entriesOf, importPreauthorized, listPreauthorized } from "./service.js";

const TAG = "Enrollment";
const audit = { entity: "preauthorized_device" };

export const preauthorizedDevicesRouter = router({
  list: protectedProcedure("devices:read")
    .meta({ openapi: { method: "GET", path: "/preauthorized-devices", tags: [TAG], summary: "The pre-authorized devices, newest first" } })
    .input(z.object({ ...pagingInput, search: z.string().max(200).optional().describe("substring of the device id") }))
    .output(pageOutput(preauthorizedOutput))
    .query(async ({ ctx, input }) => {
      const { rows, total } = await listPreauthorized(ctx.db, ctx.principal.organizationId, input);
      return pageOf(rows.map(toPreauthorizedDto), total, input.offset);
    }),

  import: protectedProcedure("enrollment:write")
    .meta({
      openapi: {
        method: "POST",
        path: "/preauthorized-devices/import",
        tags: [TAG],
        summary: "Import the factory's list (JSON or CSV): listed ids are added or replaced",
        description:
          "A device enrolling with a listed id is admitted with the entry's labels (any token mode); with another key than the entry names it is " +
          "refused and shown in the lobby as a conflict. Tokens in mode `preauthorized` admit listed ids only. 400 names the first bad entry; nothing is imported then.",
      },
      audit: { ...audit, action: "preauthorized-devices.import" },
    })
    .input(importInput)
    .output(z.object({ created: z.number().int(), updated: z.number().int() }))
    .mutation(async ({ ctx, input }) => {
      const entries = entriesOf(input);
      const result = await importPreauthorized(ctx.db, ctx.principal, entries);
      if (ctx.audit) ctx.audit.changes = { ...result, deviceIds: entries.map((e) => e.reportedDeviceId).slice(0, 1000) };
      return result;
    }),

  delete: protectedProcedure("enrollment:write")
    .meta({
      openapi: { method: "DELETE", path: "/preauthorized-devices/{id}", tags: [TAG], summary: "Remove an entry (a device it admitted stays admitted)" },
      audit: { ...audit, action: "preauthorized-devices.delete" },
    })
    .input(z.object({ id: z.string().uuid() }))
    .output(preauthorizedOutput)
    .mutation(async ({ ctx, input }) => toPreauthorizedDto(await deletePreauthorized(ctx.db, ctx.principal.organizationId, input.id))),
});
