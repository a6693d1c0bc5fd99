// Device certificates: /api/v1/devices/{deviceId}/certificates. Certificates are first issued
// by enrollment (issueCertificateForDevice); here they are read, revoked and renewed.
import { protectedProcedure, router } from "../../../trpc/procedures.js";
import {
  deviceCertificateInput,
  deviceCertificateOutput,
  deviceCertificatePageOutput,
  listDeviceCertificatesInput,
  renewInput,
  revokeInput,
  toDeviceCertificateDto,
} from "./schemas.js";
import { getDeviceCertificate, listDeviceCertificates, renewDeviceCertificate, revokeDeviceCertificate } from "./service.js";

const TAG = "Device certificates";
const audit = { entity: "device_certificate" };

export const deviceCertificatesRouter = router({
  list: protectedProcedure("certificates:read")
    .meta({ openapi: { method: "GET", path: "/devices/{deviceId}/certificates", tags: [TAG], summary: "List a device's certificates, newest first" } })
    .input(listDeviceCertificatesInput)
    .output(deviceCertificatePageOutput)
    .query(async ({ ctx, input }) => {
      const page = await listDeviceCertificates(ctx.db, ctx.principal.organizationId, input);
      return { ...page, items: page.items.map((c) => toDeviceCertificateDto(c)) };
    }),

  get: protectedProcedure("certificates:read")
    .meta({ openapi: { method: "GET", path: "/devices/{deviceId}/certificates/{certificateId}", tags: [TAG], summary: "Get a device certificate" } })
    .input(deviceCertificateInput)
    .output(deviceCertificateOutput)
    .query(async ({ ctx, input }) =>
      toDeviceCertificateDto(await getDeviceCertificate(ctx.db, ctx.principal.organizationId, input.deviceId, input.certificateId))),

  revoke: protectedProcedure("certificates:write")
    .meta({
      openapi: {
        method: "POST", path: "/devices/{deviceId}/certificates/{certificateId}/revoke", tags: [TAG],
        summary: "Revoke a device certificate", description: "A second revocation answers 409. The CA's revocation list carries it from the next fetch on.",
      },
      audit,
      mcp: { destructive: true },
    })
    .input(revokeInput)
    .output(deviceCertificateOutput)
    .mutation(async ({ ctx, input }) => toDeviceCertificateDto(await revokeDeviceCertificate(ctx.db, ctx.principal.organizationId, input))),

  renew: protectedProcedure("certificates:write")
    .meta({
      openapi: {
        method: "POST", path: "/devices/{deviceId}/certificates/{certificateId}/renew", tags: [TAG],
        summary: "Renew a device certificate with the default CA (from a new CSR or for the same key)",
        description: "Answers the new certificate (201). The old one stays valid unless supersede is true, which revokes it with reason Superseded.",
      },
      successStatus: 201,
      audit,
    })
    .input(renewInput)
    .output(deviceCertificateOutput)
    .mutation(async ({ ctx, input }) =>
      toDeviceCertificateDto(await renewDeviceCertificate(ctx.db, ctx.services.secrets, {
        validityDays: ctx.services.config.DEVICE_CERT_VALIDITY_DAYS,
        ...input,
        organizationId: ctx.principal.organizationId,
      }))),
});
