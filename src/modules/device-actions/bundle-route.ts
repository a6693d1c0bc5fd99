// GET /api/v1/device-actions/{id}/bundle: a diagnostics bundle as a tar.gz download, until it
// expires (BUNDLE_KEPT_SECONDS). A plain route (procedures answer JSON only) behind the
// procedures' gate (actions:read, audited refusals); each download is audited: a bundle holds
// the device's logs.
import express, { type Router } from "express";
import { z } from "zod";
import type { Services } from "../../services.js";
import { writeAudit } from "../../trpc/audit.js";
import { TRPCError } from "../../trpc/procedures.js";
import { guardedJsonRoute } from "../../http/guarded-route.js";
import { errorResponse, type ExtraPaths } from "../../http/docs.js";

const PATH = "deviceActions.bundle";
const params = z.object({ id: z.string().uuid() });

export function deviceActionBundleRoutes(services: Services): Router {
  const r = express.Router();
  r.get("/device-actions/:id/bundle", guardedJsonRoute(services, { label: PATH, access: { permission: "actions:read" }, body: z.object({}) }, async ({ principal, request, req, res }) => {
    const { id } = params.parse(req.params);
    // read through the driver as base64, as it was written (src/modules/agent/action-bundle-route.ts)
    const [bundle] = await services.database.opened.raw.query<{ data: string; sizeBytes: number; sha256: string; createdAt: string; deviceName: string }>(
      `SELECT encode(b."data", 'base64') AS "data", b."sizeBytes", b."sha256", to_char(b."createdAt", 'YYYYMMDD"T"HH24MISS"Z"') AS "createdAt", d."name" AS "deviceName"
         FROM "DeviceActionBundle" b JOIN "DeviceAction" a ON a."id" = b."actionId" JOIN "Device" d ON d."id" = a."deviceId"
        WHERE b."actionId" = $1::uuid AND b."organizationId" = $2::uuid AND b."expiresAt" > (now() AT TIME ZONE 'UTC')`,
      [id, principal.organizationId],
    );
    if (!bundle) throw new TRPCError({ code: "NOT_FOUND", message: "No diagnostics bundle for this action (none was uploaded, or it expired)" });
    const device = bundle.deviceName.replace(/[^A-Za-z0-9._-]+/g, "-").slice(0, 80) || "device";
    const stamp = bundle.createdAt;
    res.setHeader("Content-Type", "application/gzip");
    res.setHeader("Content-Disposition", `attachment; filename="diagnostics-${device}-${stamp}.tar.gz"`);
    res.setHeader("Cache-Control", "no-store");
    res.setHeader("X-Content-SHA256", bundle.sha256);
    res.send(Buffer.from(bundle.data, "base64"));
    await writeAudit(services.prisma, request, principal, {
      action: PATH, outcome: "success", entityType: "device_action", entityId: id, message: `downloaded a diagnostics bundle of ${bundle.sizeBytes} bytes`,
    }).catch((err: Error) => services.logger.warn({ err: err.message }, "could not record the bundle download"));
  }));
  return r;
}

export const deviceActionBundleOpenApiPaths: ExtraPaths = {
  "/device-actions/{id}/bundle": {
    get: {
      operationId: "deviceActions-bundle",
      tags: ["Device actions"],
      summary: "Download a diagnostics action's bundle (tar.gz) while it is kept (actions:read)",
      security: [{ ApiKey: [] }, { Bearer: [] }],
      parameters: [{ name: "id", in: "path", required: true, schema: { type: "string", format: "uuid" } }],
      responses: {
        200: {
          description: "The bundle, as an attachment; X-Content-SHA256 its digest",
          headers: { "Content-Disposition": { schema: { type: "string" }, description: 'attachment; filename="diagnostics-<device>-<time>.tar.gz"' } },
          content: { "application/gzip": { schema: { type: "string", format: "binary" } } },
        },
        401: errorResponse("Authentication missing or invalid"),
        403: errorResponse("Missing permission actions:read"),
        404: errorResponse("No such action in your organization, or no bundle (not uploaded, or expired)"),
      },
    },
  },
};
