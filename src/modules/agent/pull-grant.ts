// Pull grants: how a device pulls the images of its organization's private OCI registries
// without ever holding their credentials (docs/agent.md, "Private registries").
//
// With a component's compose file (GET /agent/deployments/{id}/components/{name}) the service
// hands the device a grant: a signed token (HS256 under a key of its own, derived from the
// service's JWT key, so it is no user token and no user token is a grant), valid for
// PULL_GRANT_SECONDS, naming the device, its certificate, the deployment, and the repositories
// of the organization's registries that the compose file names (with the deployment's parameters
// applied to the image references). The device pulls those images from the service's read-only
// registry proxy (/v2/, pull-proxy-route.ts) with the grant as a Basic password; the proxy
// reads the registry with the organization's credential, which never leaves the service.
// Nothing is stored: a grant is refused once expired, outside its repositories, when the
// deployment no longer targets the device for an install, or when the device's certificate was
// revoked.
import { createHmac } from "node:crypto";
import { jwtVerify, SignJWT } from "jose";
import { parse } from "yaml";

export const PULL_GRANT_SECONDS = 15 * 60;
/** the user name of the Basic credential a device pulls with (the password is the grant) */
export const PULL_GRANT_USER = "fleet-pull-grant";
const ISSUER = "fleet-manager/pull-grant";
const KEY_LABEL = "fleet-manager pull grant v1";

export interface PullScope {
  registryId: string;
  /** repository path at that registry (demo/web) */
  repository: string;
}

export interface PullGrantClaims {
  deviceId: string;
  organizationId: string;
  /** the device certificate the grant was issued to (its fingerprint) */
  fingerprint: string;
  deploymentId: string;
  repositories: PullScope[];
}

/** The grants' signing key: derived from the service's JWT key, and used for nothing else. */
export function pullGrantKey(jwtKey: Uint8Array): Uint8Array {
  return createHmac("sha256", jwtKey).update(KEY_LABEL).digest();
}

export function signPullGrant(key: Uint8Array, claims: PullGrantClaims, expiresAt: Date): Promise<string> {
  return new SignJWT({ org: claims.organizationId, fp: claims.fingerprint, dep: claims.deploymentId, repos: claims.repositories.map((r) => `${r.registryId}/${r.repository}`) })
    .setProtectedHeader({ alg: "HS256", typ: "pull-grant" })
    .setIssuer(ISSUER)
    .setSubject(claims.deviceId)
    .setIssuedAt()
    .setExpirationTime(Math.floor(expiresAt.getTime() / 1000))
    .sign(key);
}

/** The grant's claims when its signature holds and it has not expired; else null. */
export async function verifyPullGrant(key: Uint8Array, token: string): Promise<PullGrantClaims | null> {
  try {
    const { payload, protectedHeader } = await jwtVerify(token, key, { issuer: ISSUER, algorithms: ["HS256"] });
    if (protectedHeader.typ !== "pull-grant") return null;
    const { sub, org, fp, dep, repos } = payload as Record<string, unknown>;
    if (typeof sub !== "string" || typeof org !== "string" || typeof fp !== "string" || typeof dep !== "string" || !Array.isArray(repos)) return null;
    const repositories = repos.filter((r): r is string => typeof r === "string").map((r) => {
      const slash = r.indexOf("/");
      return { registryId: r.slice(0, slash), repository: r.slice(slash + 1) };
    });
    return { deviceId: sub, organizationId: org, fingerprint: fp, deploymentId: dep, repositories };
  } catch {
    return null;
  }
}

/**
 * An image reference split as the engines read it: the registry host (the first path component
 * when it holds a '.' or ':' or is `localhost`; else Docker Hub), the repository path, without
 * tag or digest. Null when it is no reference (empty, or still holding `${...}`).
 */
export function splitImageReference(image: string): { host: string; repository: string } | null {
  const withoutDigest = image.trim().split("@")[0];
  const lastSlash = withoutDigest.lastIndexOf("/");
  const colon = withoutDigest.lastIndexOf(":");
  const name = colon > lastSlash ? withoutDigest.slice(0, colon) : withoutDigest;
  if (!name || /[$\s{}]/.test(name)) return null;
  const first = name.split("/")[0];
  const hasHost = name.includes("/") && (first.includes(".") || first.includes(":") || first === "localhost");
  const host = hasHost ? first.toLowerCase() : "docker.io";
  let repository = hasHost ? name.slice(first.length + 1) : name;
  if (!hasHost && !repository.includes("/")) repository = `library/${repository}`;
  return repository ? { host, repository } : null;
}

/** `${NAME}`, `${NAME:-default}`, `${NAME-default}` and `$NAME` of environment-variable parameters, as compose interpolates them. */
function interpolate(text: string, env: Record<string, string>): string {
  return text
    .replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)(?::?-([^}]*))?\}/g, (_, name: string, fallback: string | undefined) => env[name] ?? fallback ?? "")
    .replace(/\$([A-Za-z_][A-Za-z0-9_]*)/g, (whole, name: string) => env[name] ?? whole);
}

/**
 * The image references a component's compose file names once the deployment's parameters apply
 * (those of its values the agent renders into the file: environment-variable names, and JSON
 * pointers to /services/<name>/image). Unreadable YAML names none (the agent refuses it).
 */
export function composeImages(content: string, parameters: Record<string, unknown>): string[] {
  let doc: unknown;
  try {
    doc = parse(content);
  } catch {
    return [];
  }
  const services = (doc as { services?: unknown } | null)?.services;
  if (!services || typeof services !== "object") return [];
  const env: Record<string, string> = {};
  for (const [pointer, value] of Object.entries(parameters)) {
    if (/^[A-Za-z_][A-Za-z0-9_]*$/.test(pointer) && value !== null && typeof value !== "object") env[pointer] = String(value);
  }
  const images = new Set<string>();
  for (const [name, service] of Object.entries(services as Record<string, { image?: unknown } | null>)) {
    const pointed = parameters[`/services/${name.replace(/~/g, "~0").replace(/\//g, "~1")}/image`];
    const image = typeof pointed === "string" ? pointed : service?.image;
    if (typeof image === "string") images.add(interpolate(image, env));
  }
  return [...images];
}
