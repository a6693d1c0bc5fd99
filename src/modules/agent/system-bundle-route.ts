// GET /api/v1/agent/deployments/{deploymentId}/components/{component}/bundle: the RAUC bundle of
// a deployment's system-image component kept in an OCI registry (docs/os-updates.md), relayed to
// the device the deployment targets. A plain route: the answer is the bundle's bytes (hundreds of
// megabytes, streamed), which a procedure cannot give.
//
// Why through the service: the organization's registry credential stays sealed here, as for
// compose packages and images (pull-proxy-route.ts), and a device needs no route to the registry.
// The bundle is the registry's blob named by the component's digest (an artifact pushed with the
// .raucb as its one layer, e.g. `oras push registry/os/gateway:2.0.0 gateway.raucb`): the digest
// the device checks is the one the registry serves by, so nothing else of the artifact is read.
// A Range request is passed on, so an interrupted download goes on where it stopped.
//
// Authenticated like every device call (device token, certificate re-checked). A deployment
// that no longer targets the device for an install, another device's or tenant's: 404.
import express, { type Router } from "express";
import { TRPCError } from "@trpc/server";
import type { Services } from "../../services.js";
import { authenticateDeviceRequest } from "../../trpc/device-auth.js";
import { requestInfoOf } from "../../trpc/context.js";
import { sendRestError } from "../../http/error-response.js";
import { errorResponse, type ExtraPaths } from "../../http/docs.js";
import { COMPONENT_NAME_PATTERN } from "../applications/manifest/rules.js";
import { organizationRegistries, parseOciReference, registryFor, targetedComponent } from "./package.js";
import { relayRegistry } from "./pull-proxy-route.js";

const PROCEDURE = "agent.systemBundle";
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const DIGEST = /^sha256:[0-9a-f]{64}$/;

const ERROR_CODES: Record<number, TRPCError["code"]> = { 404: "NOT_FOUND", 502: "BAD_GATEWAY" };

export function systemBundleRoutes(services: Services): Router {
  const r = express.Router();
  r.get("/agent/deployments/:deploymentId/components/:component/bundle", async (req, res) => {
    const request = requestInfoOf(req);
    try {
      const device = await authenticateDeviceRequest(services, request, req.headers, PROCEDURE, res, { recheck: true });
      const deploymentId = String(req.params.deploymentId);
      const name = String(req.params.component);
      if (!UUID.test(deploymentId)) throw new TRPCError({ code: "BAD_REQUEST", message: "deploymentId: not a UUID" });
      if (!COMPONENT_NAME_PATTERN.test(name)) throw new TRPCError({ code: "BAD_REQUEST", message: `component: must match ${COMPONENT_NAME_PATTERN.source}` });
      const { component } = await targetedComponent(services, device, deploymentId, name);
      const { type, repository = "", digest = "" } = component.properties ?? {};
      const reference = parseOciReference(repository);
      if (type !== "system-image" || !reference || !DIGEST.test(digest)) {
        throw new TRPCError({ code: "NOT_FOUND", message: `Component "${name}" is not a system image kept in an OCI registry: the device fetches an https:// bundle from its URL` });
      }
      const registry = registryFor(await organizationRegistries(services, device.organizationId), reference.host);
      await relayRegistry(services, registry, req, res, `/v2/${reference.path}/blobs/${digest}`, {
        scope: `repository:${reference.path}:pull`, manifest: false,
        notFound: `the bundle ${digest} is not in ${repository} at its registry`,
        fail: (status, message) => sendRestError(services, res, request, new TRPCError({ code: ERROR_CODES[status] ?? "INTERNAL_SERVER_ERROR", message }), PROCEDURE),
      });
    } catch (err) {
      if (res.headersSent) return void res.destroy();
      sendRestError(services, res, request, err, PROCEDURE);
    }
  });
  return r;
}

export const systemBundleOpenApiPaths: ExtraPaths = {
  "/agent/deployments/{deploymentId}/components/{component}/bundle": {
    get: {
      operationId: "agent-systemBundle",
      tags: ["Device agent"],
      summary: "Download the RAUC bundle of a deployment's system image kept in an OCI registry",
      description: "Device token. The registry's blob of the component's digest, read with the organization's credential and streamed. "
        + "Send Range: bytes=N- to go on with an interrupted download (206). 404 when the deployment does not target this device for an install, "
        + "when the component is no oci:// system image, or when the registry has no such blob; 502 when the registry cannot be read.",
      security: [{ Bearer: [] }],
      parameters: [
        { name: "deploymentId", in: "path", required: true, schema: { type: "string", format: "uuid" } },
        { name: "component", in: "path", required: true, schema: { type: "string" } },
        { name: "Range", in: "header", required: false, schema: { type: "string", example: "bytes=1048576-" } },
      ],
      responses: {
        200: { description: "The whole bundle", content: { "application/octet-stream": { schema: { type: "string", format: "binary" } } } },
        206: { description: "The rest of the bundle from the asked offset", content: { "application/octet-stream": { schema: { type: "string", format: "binary" } } } },
        400: errorResponse("Not a UUID or not a component name"),
        401: errorResponse("Device token missing or invalid"),
        404: errorResponse("No such deployment of this device, no oci:// system image, or no such blob"),
        502: errorResponse("The registry cannot be read"),
      },
    },
  },
};
