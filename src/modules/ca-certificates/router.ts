// CA certificates: /api/v1/ca-certificates. The PEM download and the revocation list are
// plain express routes (src/modules/ca-certificates/download-routes.ts): procedures only answer JSON.
import { protectedProcedure, router } from "../../trpc/procedures.js";
import {
  caCertificateOutput,
  caIdInput,
  caPageOutput,
  deleteCaOutput,
  generateCaInput,
  listCaInput,
  renewCaInput,
  toCaCertificateDto,
  uploadCaInput,
} from "./schemas.js";
import { deleteCa, findCa, generateCa, listCas, renewCaCertificate, retireCa, setDefaultCa, uploadCa } from "./service.js";

const TAG = "CA certificates";
const audit = { entity: "ca_certificate" };

export const caCertificatesRouter = router({
  list: protectedProcedure("certificates:read")
    .meta({ openapi: { method: "GET", path: "/ca-certificates", tags: [TAG], summary: "List the organization's CA certificates, newest first" } })
    .input(listCaInput)
    .output(caPageOutput)
    .query(async ({ ctx, input }) => {
      const page = await listCas(ctx.db, ctx.principal.organizationId, input);
      return { ...page, items: page.items.map(toCaCertificateDto) };
    }),

  upload: protectedProcedure("certificates:write")
    .meta({
      openapi: {
        method: "POST", path: "/ca-certificates", tags: [TAG],
        summary: "Upload a CA certificate (or chain) with its private key",
        description: "Refused with 400 (saying why) when the input is malformed, not a CA, expired or not yet valid, a broken chain, or a key that does not match. The first CA that can sign becomes the default.",
      },
      successStatus: 201,
      audit,
    })
    .input(uploadCaInput)
    .output(caCertificateOutput)
    .mutation(async ({ ctx, input }) => toCaCertificateDto(await uploadCa(ctx.db, ctx.services.secrets, ctx.principal.organizationId, input))),

  generate: protectedProcedure("certificates:write")
    .meta({
      openapi: { method: "POST", path: "/ca-certificates/generate", tags: [TAG], summary: "Generate a self-signed root CA (ECDSA P-256 by default)" },
      successStatus: 201,
      audit,
    })
    .input(generateCaInput)
    .output(caCertificateOutput)
    .mutation(async ({ ctx, input }) => toCaCertificateDto(await generateCa(ctx.db, ctx.services.secrets, ctx.principal.organizationId, input))),

  get: protectedProcedure("certificates:read")
    .meta({ openapi: { method: "GET", path: "/ca-certificates/{id}", tags: [TAG], summary: "Get a CA certificate" } })
    .input(caIdInput)
    .output(caCertificateOutput)
    .query(async ({ ctx, input }) => toCaCertificateDto(await findCa(ctx.db, ctx.principal.organizationId, input.id))),

  delete: protectedProcedure("certificates:admin")
    .meta({
      openapi: {
        method: "DELETE", path: "/ca-certificates/{id}", tags: [TAG], summary: "Delete a CA certificate",
        description: "Refused with 409 while it is the default or has issued device certificates that are still valid.",
      },
      audit,
    })
    .input(caIdInput)
    .output(deleteCaOutput)
    .mutation(({ ctx, input }) => deleteCa(ctx.db, ctx.principal.organizationId, input.id)),

  renew: protectedProcedure("certificates:write")
    .meta({
      openapi: {
        method: "POST", path: "/ca-certificates/{id}/renew", tags: [TAG],
        summary: "Renew a self-signed CA: same key and subject, new serial and validity",
        description: "Answers the new CA (201). The old one is kept; when it was the default, the new one takes over.",
      },
      successStatus: 201,
      audit,
    })
    .input(renewCaInput)
    .output(caCertificateOutput)
    .mutation(async ({ ctx, input }) => toCaCertificateDto(await renewCaCertificate(ctx.db, ctx.services.secrets, ctx.principal.organizationId, input))),

  retire: protectedProcedure("certificates:admin")
    .meta({
      openapi: { method: "POST", path: "/ca-certificates/{id}/retire", tags: [TAG], summary: "Retire a CA: it signs no new certificate and stops being the default" },
      audit,
    })
    .input(caIdInput)
    .output(caCertificateOutput)
    .mutation(async ({ ctx, input }) => toCaCertificateDto(await retireCa(ctx.db, ctx.principal.organizationId, input.id))),

  setDefault: protectedProcedure("certificates:admin")
    .meta({
      openapi: {
        method: "PATCH", path: "/ca-certificates/{id}/default", tags: [TAG], summary: "Make a CA the default signing CA",
        description: "Requires certificates:admin. A retired CA (or one that cannot sign) is a 400 Bad request.",
      },
      audit,
    })
    .input(caIdInput)
    .output(caCertificateOutput)
    .mutation(async ({ ctx, input }) => toCaCertificateDto(await setDefaultCa(ctx.db, ctx.principal.organizationId, input.id))),
});
