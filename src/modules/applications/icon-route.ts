// GET /api/v1/applications/{id}/icon: the icon of the application's latest version, as
// stored at import (PNG or SVG). Binary, so a plain express route behind the procedures' gate
// (guardedJsonRoute), with a strong ETag so clients revalidate instead of downloading again.
import express, { type Router } from "express";
import { z } from "zod";
import type { Services } from "../../services.js";
import { findApplicationIcon } from "./service.js";
import { guardedJsonRoute } from "../../http/guarded-route.js";
import { errorResponse, type ExtraPaths } from "../../http/docs.js";

const params = z.object({ id: z.string().uuid() });

/** True when an If-None-Match header (a list, possibly weak validators, or *) names this ETag. */
export function matchesEtag(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  return header.split(",").some((candidate) => {
    const value = candidate.trim();
    return value === "*" || value.replace(/^W\//, "") === etag;
  });
}

export function applicationIconRoutes(services: Services): Router {
  const r = express.Router();
  r.get(
    "/applications/:id/icon",
    guardedJsonRoute(services, { label: "applications.icon", access: { permission: "applications:read" }, body: z.object({}) }, async ({ principal, req, res }) => {
      const { id } = params.parse(req.params);
      const icon = await findApplicationIcon(services.prisma, principal.organizationId, id);
      const etag = `"${icon.sha256}"`;
      res.setHeader("ETag", etag);
      // Private: the icon is behind authentication. no-cache: revalidate (cheap, 304) every time.
      res.setHeader("Cache-Control", "private, no-cache");
      res.setHeader("Vary", "X-API-Key, Authorization");
      if (matchesEtag(req.headers["if-none-match"], etag)) {
        res.status(304).end();
        return;
      }
      res.setHeader("Content-Type", icon.contentType);
      // An SVG opened directly must not run scripts in our origin.
      res.setHeader("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; sandbox");
      res.setHeader("Content-Disposition", "inline");
      res.status(200).end(Buffer.from(icon.data));
    }),
  );
  return r;
}


export const applicationIconOpenApiPaths: ExtraPaths = {
  "/applications/{id}/icon": {
    get: {
      operationId: "applications-icon",
      tags: ["Applications"],
      summary: "The icon of an application's latest version (PNG or SVG)",
      description:
        "Requires applications:read. Answers the image with its content type and a strong ETag; send it back in If-None-Match " +
        "to get 304 Not Modified. 404 when the application has no icon.",
      security: [{ ApiKey: [] }, { Bearer: [] }],
      parameters: [
        { name: "id", in: "path", required: true, schema: { type: "string", format: "uuid" } },
        { name: "If-None-Match", in: "header", required: false, schema: { type: "string" } },
      ],
      responses: {
        200: {
          description: "The icon",
          headers: { ETag: { schema: { type: "string" } } },
          content: { "image/png": { schema: { type: "string", format: "binary" } }, "image/svg+xml": { schema: { type: "string" } } },
        },
        304: { description: "Not modified: the ETag sent in If-None-Match is current" },
        400: errorResponse("Invalid input"),
        401: errorResponse("Authentication missing or invalid"),
        403: errorResponse("Missing permission applications:read"),
        404: errorResponse("Application not found (or of another organization), or it has no icon"),
      },
    },
  },
};
