// /api/v1/tpm-ek-cas: the TPM endorsement key manufacturer CAs the organization trusts; a
// device enrolling with a TPM-held key is attested only when its EK certificate chains to one
// (docs/admission.md, "TPM-held keys").
import { z } from "zod";
import { protectedProcedure, router } from "../../trpc/procedures.js";
import { pageOf, pageOutput, pagingInput } from "../../lib/paging.js";
import { createEkCaInput, ekCaOutput, toEkCaDto } from "./schemas.js";
import { addEkCa, deleteEkCa, listEkCas } from "./service.js";

const TAG = "Enrollment";
const audit = { entity: "trusted_ek_ca" };

export const tpmEkCasRouter = router({
  list: protectedProcedure("devices:read")
    .meta({ openapi: { method: "GET", path: "/tpm-ek-cas", tags: [TAG], summary: "The trusted TPM EK manufacturer CAs, newest first" } })
    .input(z.object({ ...pagingInput }))
    .output(pageOutput(ekCaOutput))
    .query(async ({ ctx, input }) => {
      const { rows, total } = await listEkCas(ctx.db, ctx.principal.organizationId, input);
      return pageOf(rows.map(toEkCaDto), total, input.offset);
    }),

  create: protectedProcedure("enrollment:write")
    .meta({
      openapi: {
        method: "POST",
        path: "/tpm-ek-cas",
        tags: [TAG],
        summary: "Trust a TPM EK manufacturer CA",
        description: "Devices enrolling with `fleet-agent enroll --tpm` are attested when their EK certificate chains to a trusted CA; others are refused (403). 400 when the certificate is not a CA certificate; 409 when it is trusted already.",
      },
      successStatus: 201,
      audit: { ...audit, action: "tpm-ek-cas.create" },
    })
    .input(createEkCaInput)
    .output(ekCaOutput)
    .mutation(async ({ ctx, input }) => {
      const row = await addEkCa(ctx.db, ctx.principal, input);
      if (ctx.audit) {
        ctx.audit.entityId = row.id;
        ctx.audit.changes = { name: row.name, subject: row.subject, fingerprint: row.fingerprint };
      }
      return toEkCaDto(row);
    }),

  delete: protectedProcedure("enrollment:write")
    .meta({
      openapi: { method: "DELETE", path: "/tpm-ek-cas/{id}", tags: [TAG], summary: "Stop trusting a TPM EK manufacturer CA (attested devices stay; their next renewal is refused)" },
      audit: { ...audit, action: "tpm-ek-cas.delete" },
    })
    .input(z.object({ id: z.string().uuid() }))
    .output(ekCaOutput)
    .mutation(async ({ ctx, input }) => toEkCaDto(await deleteEkCa(ctx.db, ctx.principal.organizationId, input.id))),
});
