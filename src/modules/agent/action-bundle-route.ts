// POST /api/v1/agent/actions/{id}/bundle: a device uploads the diagnostics bundle of an action
// it was handed (tar.gz, at most BUNDLE_MAX_BYTES). A plain route: the body is binary, which a
// procedure cannot take. Authenticated like every device call (a device token, certificate
// re-checked); an action of another device is a 404. The action's state is the device's
// report in its next heartbeat (docs/actions.md).
import crypto from "node:crypto";
import express, { type Router } from "express";
import { TRPCError } from "@trpc/server";
import type { Services } from "../../services.js";
import { authenticateDeviceRequest } from "../../trpc/device-auth.js";
import { requestInfoOf } from "../../trpc/context.js";
import { sendJson, sendRestError } from "../../http/error-response.js";
import { errorResponse, type ExtraPaths } from "../../http/docs.js";
import { BUNDLE_KEPT_SECONDS, BUNDLE_MAX_BYTES } from "../device-actions/kinds.js";

const PROCEDURE = "agent.actionBundle";
const idParam = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A retried upload replaces the first. */
const STORE_BUNDLE = `
  INSERT INTO "DeviceActionBundle" ("actionId", "organizationId", "data", "sizeBytes", "sha256", "expiresAt", "createdAt")
  VALUES ($1::uuid, $2::uuid, decode($3::text, 'base64'), $4::int, $5::text,
          (now() AT TIME ZONE 'UTC') + make_interval(secs => $6::int), (now() AT TIME ZONE 'UTC'))
  ON CONFLICT ("actionId") DO UPDATE SET "data" = EXCLUDED."data", "sizeBytes" = EXCLUDED."sizeBytes", "sha256" = EXCLUDED."sha256",
    "expiresAt" = EXCLUDED."expiresAt", "createdAt" = EXCLUDED."createdAt"
  RETURNING "sizeBytes", "sha256", to_char("expiresAt", 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS "expiresAt"`;

export function actionBundleRoutes(services: Services): Router {
  const r = express.Router();
  const raw = express.raw({ type: () => true, limit: BUNDLE_MAX_BYTES });
  r.post("/agent/actions/:id/bundle", raw, async (req, res) => {
    const request = requestInfoOf(req);
    try {
      const device = await authenticateDeviceRequest(services, request, req.headers, PROCEDURE, res, { recheck: true });
      const id = String(req.params.id);
      if (!idParam.test(id)) throw new TRPCError({ code: "BAD_REQUEST", message: "id: not a UUID" });
      const body = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
      if (body.length < 2 || body[0] !== 0x1f || body[1] !== 0x8b) throw new TRPCError({ code: "BAD_REQUEST", message: "body: not a gzip-compressed archive (tar.gz)" });
      const action = await services.prisma.deviceAction.findFirst({ where: { id, deviceId: device.deviceId, kind: "diagnostics" }, select: { id: true, state: true, organizationId: true } });
      if (!action) throw new TRPCError({ code: "NOT_FOUND", message: "Device action not found" });
      if (!["delivered", "running"].includes(action.state)) throw new TRPCError({ code: "CONFLICT", message: `The action is ${action.state}: it takes no bundle` });
      // through the driver with base64: Prisma's Bytes reach PGlite's bytea serializer in a shape it refuses
      const [stored] = await services.database.opened.raw.query<{ sizeBytes: number; sha256: string; expiresAt: string }>(STORE_BUNDLE, [
        id, action.organizationId, body.toString("base64"), body.length,
        crypto.createHash("sha256").update(body).digest("hex"), BUNDLE_KEPT_SECONDS,
      ]);
      sendJson(res, 201, stored);
    } catch (err) {
      const tooLarge = (err as { type?: string })?.type === "entity.too.large";
      sendRestError(services, res, request, tooLarge ? new TRPCError({ code: "PAYLOAD_TOO_LARGE", message: `body: the bundle is larger than ${BUNDLE_MAX_BYTES} bytes` }) : err, PROCEDURE);
    }
  });
  return r;
}

export const actionBundleOpenApiPaths: ExtraPaths = {
  "/agent/actions/{id}/bundle": {
    post: {
      operationId: "agent-actionBundle",
      tags: ["Device agent"],
      summary: "Upload the diagnostics bundle of an action the device was handed (tar.gz)",
      description: `Device token. At most ${BUNDLE_MAX_BYTES} bytes; kept ${BUNDLE_KEPT_SECONDS / 86400} days. 404 for an action of another device or of another kind; 409 once the action ended.`,
      security: [{ Bearer: [] }],
      parameters: [{ name: "id", in: "path", required: true, schema: { type: "string", format: "uuid" } }],
      requestBody: { required: true, content: { "application/gzip": { schema: { type: "string", format: "binary" } } } },
      responses: {
        201: { description: "Stored", content: { "application/json": { schema: { type: "object", properties: { sizeBytes: { type: "integer" }, sha256: { type: "string" }, expiresAt: { type: "string", format: "date-time" } } } } } },
        400: errorResponse("Not a gzip body"),
        401: errorResponse("Device token missing or invalid"),
        404: errorResponse("No such action of this device"),
        409: errorResponse("The action ended"),
        413: errorResponse("The bundle is too large"),
      },
    },
  },
};
