// The two PKI answers that are not JSON: a CA's PEM download and its revocation list (DER or
// PEM). Plain express routes (procedures only answer JSON), mounted before the REST facade,
// behind the same gate as the procedures (guardedJsonRoute: authentication, permission,
// audited refusals, the REST error body) and scoped to the caller's organization.
import express, { type Router } from "express";
import { z } from "zod";
import type { Services } from "../../services.js";
import { findCa } from "./service.js";
import { currentRevocationList } from "./crl.js";
import { errorResponse, type ExtraPaths } from "../../http/docs.js";
import { guardedJsonRoute } from "../../http/guarded-route.js";


const read = { permission: "certificates:read" } as const;
const noBody = z.object({});
const caParams = z.object({ id: z.string().uuid() });
const crlQuery = z.object({ format: z.enum(["der", "pem"]).default("der") });

/** A file name derived from the CA's name: letters, digits, dot, dash and underscore only. */
function fileNameOf(name: string, extension: string): string {
  const base = name.replace(/[^A-Za-z0-9._-]+/g, "-").replace(/^[-.]+|-+$/g, "").slice(0, 100) || "ca-certificate";
  return `${base}.${extension}`;
}

export function pkiRoutes(services: Services): Router {
  const r = express.Router();

  r.get("/ca-certificates/:id/download", guardedJsonRoute(services, { label: "caCertificates.download", access: read, body: noBody }, async ({ principal, req, res }) => {
    const ca = await findCa(services.prisma, principal.organizationId, caParams.parse(req.params).id);
    res.setHeader("Content-Type", "application/x-pem-file");
    res.setHeader("Content-Disposition", `attachment; filename="${fileNameOf(ca.name, "pem")}"`);
    res.setHeader("Cache-Control", "no-store");
    // The certificate, then the issuers of an intermediate: what a trust store or a device needs.
    res.send([ca.certificatePem, ...ca.chainPems].join(""));
  }));

  r.get("/ca-certificates/:id/crl", guardedJsonRoute(services, { label: "caCertificates.crl", access: read, body: noBody }, async ({ principal, req, res }) => {
    const { id } = caParams.parse(req.params);
    const { format } = crlQuery.parse(req.query);
    const ca = await findCa(services.prisma, principal.organizationId, id);
    const crl = await currentRevocationList(services.prisma, services.secrets, ca);
    res.setHeader("Cache-Control", "no-store");
    res.setHeader("Last-Modified", crl.thisUpdate.toUTCString());
    if (format === "pem") {
      res.setHeader("Content-Type", "application/x-pem-file");
      res.setHeader("Content-Disposition", `attachment; filename="${fileNameOf(ca.name, "crl.pem")}"`);
      res.send(crl.pem);
    } else {
      res.setHeader("Content-Type", "application/pkix-crl");
      res.setHeader("Content-Disposition", `attachment; filename="${fileNameOf(ca.name, "crl")}"`);
      res.send(Buffer.from(crl.pem.replace(/-----[^-]+-----|\s+/g, ""), "base64"));
    }
  }));

  return r;
}

const idParameter = { name: "id", in: "path", required: true, schema: { type: "string", format: "uuid" } };
const security = [{ ApiKey: [] }, { Bearer: [] }];
const errors = {
  400: errorResponse("Invalid input"),
  401: errorResponse("Authentication missing or invalid"),
  403: errorResponse("Missing permission certificates:read"),
  404: errorResponse("CA certificate not found (or of another organization)"),
};

export const pkiOpenApiPaths: ExtraPaths = {
  "/ca-certificates/{id}/download": {
    get: {
      operationId: "caCertificates-download",
      tags: ["CA certificates"],
      summary: "Download a CA certificate (PEM, followed by its issuers for an intermediate)",
      description: "Requires certificates:read. Answers a PEM file with a Content-Disposition attachment header.",
      security,
      parameters: [idParameter],
      responses: {
        200: {
          description: "The CA certificate as PEM",
          headers: { "Content-Disposition": { schema: { type: "string" }, description: 'attachment; filename="<name>.pem"' } },
          content: { "application/x-pem-file": { schema: { type: "string" } } },
        },
        ...errors,
      },
    },
  },
  "/ca-certificates/{id}/crl": {
    get: {
      operationId: "caCertificates-crl",
      tags: ["CA certificates"],
      summary: "The CA's certificate revocation list (X.509 v2, signed by the CA)",
      description:
        "Requires certificates:read. Lists every revoked device certificate signed as this CA (a renewed CA and its predecessor share one list) " +
        "with its reason code; a new list with the next cRLNumber is signed after each revocation. DER by default, PEM with ?format=pem. " +
        "409 when the CA was uploaded without its private key (it cannot sign).",
      security,
      parameters: [
        idParameter,
        { name: "format", in: "query", required: false, schema: { type: "string", enum: ["der", "pem"], default: "der" } },
      ],
      responses: {
        200: {
          description: "The signed CRL",
          content: {
            "application/pkix-crl": { schema: { type: "string", format: "binary" } },
            "application/x-pem-file": { schema: { type: "string" } },
          },
        },
        ...errors,
        409: errorResponse("The CA has no private key and cannot sign a revocation list"),
      },
    },
  },
};
