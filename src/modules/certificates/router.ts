// Device certificates across the organization: /api/v1/certificates. Static paths come
// before the list so that trpc-to-openapi's first-match routing stays obvious.
import { protectedProcedure, router } from "../../trpc/procedures.js";
import { deviceCertificatePageOutput, toDeviceCertificateDto } from "../devices/certificates/schemas.js";
import { expiringCertificatePageOutput, expiringInput, listCertificatesInput, statsInput, statsOutput } from "./schemas.js";
import { certificateStats, listCertificates, listExpiring } from "./service.js";

const TAG = "Certificates";

export const certificatesRouter = router({
  expiring: protectedProcedure("certificates:read")
    .meta({
      openapi: {
        method: "GET", path: "/certificates/expiring", tags: [TAG],
        summary: "Valid device certificates expiring within `days` (default 30) that are not renewed yet, soonest first",
        description: "Each certificate comes with its device's name (`deviceName`).",
      },
    })
    .input(expiringInput)
    .output(expiringCertificatePageOutput)
    .query(async ({ ctx, input }) => {
      const page = await listExpiring(ctx.db, ctx.principal.organizationId, input);
      return { ...page, items: page.items.map((c) => ({ ...toDeviceCertificateDto(c), deviceName: c.deviceName })) };
    }),

  stats: protectedProcedure("certificates:read")
    .meta({ openapi: { method: "GET", path: "/certificates/stats", tags: [TAG], summary: "Device certificate statistics: valid, expiring soon, expired, revoked, by CA" } })
    .input(statsInput)
    .output(statsOutput)
    .query(({ ctx, input }) => certificateStats(ctx.db, ctx.principal.organizationId, input.days)),

  list: protectedProcedure("certificates:read")
    .meta({ openapi: { method: "GET", path: "/certificates", tags: [TAG], summary: "List the organization's device certificates, newest first" } })
    .input(listCertificatesInput)
    .output(deviceCertificatePageOutput)
    .query(async ({ ctx, input }) => {
      const page = await listCertificates(ctx.db, ctx.principal.organizationId, input);
      return { ...page, items: page.items.map((c) => toDeviceCertificateDto(c)) };
    }),
});
