// The service's read-only registry proxy at /v2/ (the OCI distribution API's pull half): how a
// device pulls an image of its organization's private registry with a pull grant
// (pull-grant.ts) instead of the registry's credential (docs/agent.md, "Private registries").
//
//   GET|HEAD /v2/                                                  the API check (401 + Basic challenge without a grant)
//   GET|HEAD /v2/<registryId>/<repository>/manifests/<tag|digest>
//   GET|HEAD /v2/<registryId>/<repository>/blobs/<digest>
//
// The engine authenticates with Basic `fleet-pull-grant:<grant>` (podman pull --authfile,
// docker --config). Each request is checked: the grant's signature and expiry (401), that it
// names this registry's repository (403), that its deployment still targets its device for an
// install and the device's certificate is neither revoked nor expired (403). Then the service
// reads the registry with the organization's credential, through the outbound address policy
// as every registry call does (createDistributionClient), and streams the answer back; blob
// redirects to storage are followed by the service. Nothing else is served: no push, no
// catalog, no tag list (405 / 404).
import { pipeline } from "node:stream/promises";
import { Readable } from "node:stream";
import express, { type Request, type Response, type Router } from "express";
import type { Services } from "../../services.js";
import { outboundPolicyOf } from "../../lib/outbound.js";
import { createDistributionClient } from "../registries/oci/distribution.js";
import { describeRegistryFailure } from "../registries/oci/health.js";
import { MANIFEST_ACCEPT } from "../registries/oci/sync.js";
import { Prisma } from "../../generated/prisma/client.js";
import { admittedSql } from "./admission-gate.js";
import { PULL_GRANT_USER, pullGrantKey, verifyPullGrant, type PullGrantClaims } from "./pull-grant.js";

export const PULL_PROXY_PATH = "/v2";
/** how long one proxied request may take (a large layer on a slow registry) */
const REQUEST_TIMEOUT_MS = 30 * 60_000;
/** the largest answer relayed (one layer) */
const MAX_BYTES = 16 * 1024 * 1024 * 1024;
const CHALLENGE = 'Basic realm="fleet-manager pull grants"';
const RELAYED_HEADERS = ["content-type", "content-length", "content-range", "accept-ranges", "docker-content-digest", "etag"];
// <registryId>/<repository path>/(manifests|blobs)/<reference>, the OCI distribution spec's grammar
const TARGET = /^\/([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\/([a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:\/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*)\/(manifests|blobs)\/([A-Za-z0-9_][A-Za-z0-9._-]{0,127}|[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[a-zA-Z0-9=_-]+)$/;

/** An error in the distribution API's shape, which engines print. */
function ociError(res: Response, status: number, code: string, message: string) {
  if (status === 401) res.setHeader("WWW-Authenticate", CHALLENGE);
  res.status(status).json({ errors: [{ code, message }] });
}

/** The grant of a Basic credential `fleet-pull-grant:<grant>`, or null. */
function grantOf(req: Request): string | null {
  const match = /^Basic\s+([A-Za-z0-9+/=]+)$/i.exec(req.headers.authorization ?? "");
  if (!match) return null;
  const decoded = Buffer.from(match[1], "base64").toString("utf8");
  const colon = decoded.indexOf(":");
  return colon > 0 && decoded.slice(0, colon) === PULL_GRANT_USER ? decoded.slice(colon + 1) : null;
}

const ADMITTED_DD = Prisma.raw(admittedSql(`dd."deviceId"`));

/** The deployment still targets the grant's device for an install, with the certificate the grant was issued to, and the device is admitted. */
async function stillGranted(services: Services, grant: PullGrantClaims): Promise<boolean> {
  const rows = await services.prisma.$queryRaw<unknown[]>`
    SELECT 1
      FROM "DeploymentDevice" dd
      JOIN "Deployment" d ON d."id" = dd."deploymentId"
      JOIN "Organization" o ON o."id" = d."organizationId" AND o."status" = 'active'
     WHERE dd."deviceId" = ${grant.deviceId}::uuid AND dd."deploymentId" = ${grant.deploymentId}::uuid AND dd."desiredAction" = 'install'
       AND d."organizationId" = ${grant.organizationId}::uuid
       AND ${ADMITTED_DD}
       AND EXISTS (SELECT 1 FROM "DeviceCertificate" c
                    WHERE c."fingerprint" = ${grant.fingerprint} AND c."deviceId" = dd."deviceId"
                      AND NOT c."revoked" AND c."notAfter" > (now() AT TIME ZONE 'UTC'))`;
  return rows.length > 0;
}

export function pullProxyRoutes(services: Services): Router {
  const router = express.Router();
  const key = pullGrantKey(services.jwtKey);
  router.use(async (req, res) => {
    try {
      if (req.method !== "GET" && req.method !== "HEAD") return ociError(res, 405, "UNSUPPORTED", "this registry proxy only serves pulls (GET and HEAD)");
      const token = grantOf(req);
      const grant = token ? await verifyPullGrant(key, token) : null;
      if (!grant) return ociError(res, 401, "UNAUTHORIZED", token ? "the pull grant is invalid or expired: the agent gets a new one with the package" : "a pull grant is required");
      res.setHeader("Docker-Distribution-API-Version", "registry/2.0");
      if (req.path === "/" || req.path === "") return void res.status(200).json({});
      const target = TARGET.exec(req.path);
      if (!target) return ociError(res, 404, "NAME_UNKNOWN", "not a manifest or blob of a granted repository");
      const [, registryId, repository, kind, reference] = target;
      if (!grant.repositories.some((r) => r.registryId === registryId && r.repository === repository)) {
        return ociError(res, 403, "DENIED", "the pull grant does not cover this repository");
      }
      if (!(await stillGranted(services, grant))) return ociError(res, 403, "DENIED", "the deployment no longer targets this device, or its certificate is no longer valid");
      const registry = await services.prisma.ociRegistry.findFirst({
        where: { id: registryId, organizationId: grant.organizationId },
        select: { url: true, authType: true, credentialSealed: true, verifyTls: true },
      });
      if (!registry) return ociError(res, 404, "NAME_UNKNOWN", "the registry is no longer configured");
      await relayRegistry(services, registry, req, res, `/v2/${repository}/${kind}/${reference}`, {
        scope: `repository:${repository}:pull`, manifest: kind === "manifests", fail: (status, message) => ociError(res, status, status === 502 ? "UNAVAILABLE" : "UNKNOWN", message),
      });
    } catch (err) {
      if (res.headersSent) return void res.destroy();
      services.logger.error({ err: { message: (err as Error).message } }, "registry proxy request failed");
      ociError(res, 500, "UNKNOWN", "internal error");
    }
  });
  return router;
}

export interface RelayOptions {
  /** the token scope the registry is asked for */
  scope: string;
  /** a manifest (the engine's Accept, or ours) rather than a blob */
  manifest: boolean;
  /** answers a failure in the caller's error shape: 502 (the registry cannot be read or refused us), 404 (with `notFound`) */
  fail: (status: number, message: string) => void;
  /** the registry's 404 is answered through `fail` with this message (else relayed as the registry said it) */
  notFound?: string;
}

/**
 * Streams one answer of the organization's registry to the caller (the pull proxy, the system
 * bundle relay): the request's Range goes along (a download resumed), and status, length, range
 * and digest headers come back. Read with the stored credential, through the outbound policy.
 */
export async function relayRegistry(
  services: Services,
  registry: { url: string; authType: string; credentialSealed: string | null; verifyTls: boolean },
  req: Request, res: Response, path: string, options: RelayOptions,
) {
  const { scope, manifest, fail } = options;
  const aborter = new AbortController();
  const timer = setTimeout(() => aborter.abort(), REQUEST_TIMEOUT_MS);
  res.once("close", () => aborter.abort());
  try {
    let credential: string | undefined;
    try {
      credential = registry.credentialSealed ? services.secrets.decrypt(registry.credentialSealed) : undefined;
    } catch {
      return fail(502, "the registry's stored credential cannot be read; an administrator sets it again");
    }
    const client = createDistributionClient({
      url: registry.url.replace(/\/+$/, ""), authType: registry.authType, credential, verifyTls: registry.verifyTls,
      policy: outboundPolicyOf(services.config), signal: aborter.signal, maxBytes: MAX_BYTES,
    });
    const accept = typeof req.headers.accept === "string" && req.headers.accept ? req.headers.accept : manifest ? MANIFEST_ACCEPT : undefined;
    let upstream;
    try {
      const range = typeof req.headers.range === "string" ? req.headers.range : undefined;
      upstream = await client.request(path, { method: req.method, accept, scope, range });
    } catch (err) {
      const message = describeRegistryFailure(err);
      services.logger.warn({ registry: registry.url, message }, "registry proxy: the registry cannot be read");
      return fail(502, `the registry cannot be read now: ${message}`);
    }
    if (upstream.status === 401 || upstream.status === 403 || upstream.status >= 500) {
      await client.drain(upstream);
      const why = upstream.status >= 500 ? `answered ${upstream.status}` : "refused the organization's credential";
      services.logger.warn({ registry: registry.url, status: upstream.status }, "registry proxy: the registry refused the request");
      return fail(502, `the registry ${why}`);
    }
    if (upstream.status === 404 && options.notFound) {
      await client.drain(upstream);
      return fail(404, options.notFound);
    }
    res.status(upstream.status);
    for (const name of RELAYED_HEADERS) if (upstream.headers[name]) res.setHeader(name, upstream.headers[name]);
    if (req.method === "HEAD") {
      await client.drain(upstream);
      return void res.end();
    }
    await pipeline(Readable.from(upstream.body), res);
  } finally {
    clearTimeout(timer);
  }
}
