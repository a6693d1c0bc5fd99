// GET /agent/deployments/{deploymentId}/components/{component}: the compose file a device runs
// for one component of a deployment it was given, fetched by the service from the component's
// `repository` at its `revision`.
//
// Why through the service and not from the registry directly: the organization's registry
// credentials stay sealed on the service (docs/agent.md, "Private registries"); the device
// proves itself with its own certificate, and only a device the deployment targets gets the
// package (anyone else: 404, as for any resource it cannot see). The answer carries the
// content's sha256, checked here against the registry's digest and again by the agent.
//
// A package is an OCI artifact whose manifest has one compose layer (media type
// application/vnd.fleet.compose.v1+yaml, or Docker's application/vnd.docker.compose.file+yaml as
// `docker compose publish` writes it), or an https:// .tar.gz archive holding the compose file
// (archive-package.ts; its sha256 checked against the component's `digest` when given).
import { TRPCError } from "@trpc/server";
import { Prisma } from "../../generated/prisma/client.js";
import { admittedSql } from "./admission-gate.js";
import type { Services } from "../../services.js";
import type { DevicePrincipal } from "../../trpc/device-auth.js";
import { badRequest, notFound, unavailable } from "../../trpc/errors.js";
import { expectOk, MANIFEST_ACCEPT, readBody, registryClient, sha256 } from "../registries/oci/sync.js";
import { RegistryError } from "../registries/oci/distribution.js";
import { describeRegistryFailure } from "../registries/oci/health.js";
import { openSecrets, renderParameters } from "../deployments/parameters.js";
import { ArchiveError, composeFromArchive, fetchArchive } from "./archive-package.js";
import { composeImages, PULL_GRANT_SECONDS, PULL_GRANT_USER, pullGrantKey, signPullGrant, splitImageReference, type PullScope } from "./pull-grant.js";

const ADMITTED_DD = Prisma.raw(admittedSql(`dd."deviceId"`));

export const COMPOSE_LAYER_TYPES = new Set(["application/vnd.fleet.compose.v1+yaml", "application/vnd.docker.compose.file+yaml"]);
/** the media type answered for the compose file of an https:// archive */
const ARCHIVE_COMPOSE_TYPE = "application/vnd.fleet.compose.v1+yaml";
const MAX_COMPOSE_BYTES = 1024 * 1024;
const FETCH_TIMEOUT_MS = 60_000;

interface Component {
  name: string;
  properties?: { type?: string; repository?: string; revision?: string; digest?: string };
}

export interface ComponentPackage {
  component: string;
  repository: string;
  revision: string;
  /** the artifact's manifest digest at the registry; for an https:// archive, the archive's sha256 */
  manifestDigest: string;
  /** sha256 of `content` */
  digest: string;
  mediaType: string;
  /** the compose file (YAML) */
  content: string;
  /** how to pull the images it names from the organization's private registries (pull-grant.ts); null when it names none */
  pullGrant: PullGrantAnswer | null;
}

export interface PullGrantAnswer {
  username: string;
  token: string;
  expiresAt: string;
  /** each private repository the file names, and its name below the service's registry proxy (<service host>/<proxy>) */
  repositories: Array<{ repository: string; proxy: string }>;
}

/** `oci://host[:port]/path` split into the registry host and the repository path. */
export function parseOciReference(repository: string): { host: string; path: string } | null {
  const match = /^oci:\/\/([^/]+)\/(.+)$/.exec(repository);
  return match ? { host: match[1].toLowerCase(), path: match[2].replace(/\/+$/, "") } : null;
}

/**
 * A component of a deployment that targets this (admitted) device for an install, with the
 * deployment's parameters; 404 for anything else (another device's, another tenant's).
 */
export async function targetedComponent(services: Services, device: DevicePrincipal, deploymentId: string, componentName: string) {
  const [row] = await services.prisma.$queryRaw<Array<{
    profileId: string; profiles: Array<{ id: string; components: Component[] }>;
    parameters: Record<string, unknown>; secretParameters: string | null; declared: Parameters<typeof renderParameters>[0] | null;
  }>>`
    SELECT d."profileId", v."profiles", d."parameters", d."secretParameters", v."parameters" AS "declared"
      FROM "DeploymentDevice" dd
      JOIN "Deployment" d ON d."id" = dd."deploymentId"
      JOIN "ApplicationVersion" v ON v."id" = d."applicationVersionId"
     WHERE dd."deviceId" = ${device.deviceId}::uuid AND dd."deploymentId" = ${deploymentId}::uuid AND dd."desiredAction" = 'install'
       AND d."organizationId" = ${device.organizationId}::uuid AND ${ADMITTED_DD}`;
  if (!row) throw notFound("Deployment");
  const profile = row.profiles.find((p) => p.id === row.profileId);
  const component = profile?.components.find((c) => c.name === componentName);
  if (!component) throw notFound(`Component "${componentName}" of the deployment's profile`);
  return { row, component };
}

/** The organization's registries (enabled or not: a disabled registry only stops syncing). */
export function organizationRegistries(services: Services, organizationId: string): Promise<RegistryRow[]> {
  return services.prisma.ociRegistry.findMany({
    where: { organizationId }, select: { id: true, url: true, authType: true, credentialSealed: true, verifyTls: true },
  });
}

/** The registry for an oci:// host (it holds the credential), else the host read anonymously over HTTPS. */
export function registryFor(registries: RegistryRow[], host: string): Omit<RegistryRow, "id"> {
  return registries.find((r) => new URL(r.url).host.toLowerCase() === host)
    ?? { url: `https://${host}`, authType: "NONE", credentialSealed: null, verifyTls: true };
}

export async function componentPackage(services: Services, device: DevicePrincipal, deploymentId: string, componentName: string): Promise<ComponentPackage> {
  const { row, component } = await targetedComponent(services, device, deploymentId, componentName);
  const repository = component.properties?.repository ?? "";
  const revision = component.properties?.revision ?? "";
  const what = `${repository}:${revision}`;
  const reference = parseOciReference(repository);
  if (!reference && !repository.startsWith("https://")) {
    throw badRequest(`component "${componentName}": only oci:// and https:// packages are served to devices (repository ${repository})`);
  }

  // The organization's registry for that host holds the credential (enabled or not: a disabled
  // registry only stops syncing).
  const registries = await organizationRegistries(services, device.organizationId);
  const signal = AbortSignal.timeout(FETCH_TIMEOUT_MS);
  let read: { manifestDigest: string; digest: string; mediaType: string; content: string };
  try {
    read = reference
      ? await readOciPackage(services, registries, reference, revision, what, signal)
      : await readArchivePackage(services, repository, component.properties?.digest, signal);
  } catch (err) {
    if (err instanceof ArchiveError && err.status === 404) throw notFound(`Package ${repository}`);
    if (err instanceof ArchiveError && err.status === 422) {
      throw new TRPCError({ code: "UNPROCESSABLE_CONTENT", message: `component "${componentName}": the package ${repository}: ${err.message}` });
    }
    if (err instanceof ArchiveError) throw unavailable(`the package ${repository} cannot be fetched now: ${err.message}`);
    if (err instanceof RegistryError && err.status === 404) throw notFound(`Package ${what} at its registry`);
    if (err instanceof RegistryError && err.status === 422) throw new TRPCError({ code: "UNPROCESSABLE_CONTENT", message: err.message });
    if (err instanceof SyntaxError) throw new TRPCError({ code: "UNPROCESSABLE_CONTENT", message: `${what}: the manifest is not JSON` });
    if (reference) throw unavailable(`the package ${what} cannot be read from its registry now: ${describeRegistryFailure(err)}`);
    throw unavailable(`the package ${repository} cannot be fetched now: ${describeRegistryFailure(err).replace("the registry", "its server")}`);
  }
  const values = { ...row.parameters, ...openSecrets(services.secrets, row.secretParameters) };
  const rendered = renderParameters(row.declared ?? {}, values, [componentName])[componentName] ?? {};
  const pullGrant = await grantFor(services, device, deploymentId, composeImages(read.content, rendered), registries);
  return { component: componentName, repository, revision, ...read, pullGrant };
}

type RegistryRow = { id: string; url: string; authType: string; credentialSealed: string | null; verifyTls: boolean };

/** The compose layer of an OCI artifact, both digests checked. */
async function readOciPackage(
  services: Services, registries: RegistryRow[], reference: { host: string; path: string }, revision: string, what: string, signal: AbortSignal,
) {
  const registry = registryFor(registries, reference.host);
  const client = registryClient(services, registry, signal);
  const scope = `repository:${reference.path}:pull`;
  const res = await client.request(`/v2/${reference.path}/manifests/${encodeURIComponent(revision)}`, { accept: MANIFEST_ACCEPT, scope });
  await expectOk(client, res, what);
  const raw = await readBody(client, res, MAX_COMPOSE_BYTES);
  const manifestDigest = res.headers["docker-content-digest"] ?? sha256(raw);
  if (sha256(raw) !== manifestDigest) throw new RegistryError(`${what}: the manifest does not match its digest`);
  const manifest = JSON.parse(raw.toString("utf8")) as { layers?: Array<{ mediaType?: string; digest?: string; size?: number }> };
  const layer = (manifest.layers ?? []).find((l) => l.mediaType && COMPOSE_LAYER_TYPES.has(l.mediaType));
  if (!layer?.digest) {
    throw new RegistryError(`${what} holds no compose file (a layer of media type ${[...COMPOSE_LAYER_TYPES].join(" or ")})`, 422);
  }
  const blobRes = await client.request(`/v2/${reference.path}/blobs/${layer.digest}`, { scope });
  await expectOk(client, blobRes, `${what}: compose layer`);
  const blob = await readBody(client, blobRes, MAX_COMPOSE_BYTES);
  if (sha256(blob) !== layer.digest) throw new RegistryError(`${what}: the compose layer does not match its digest`);
  return { manifestDigest, digest: layer.digest, mediaType: layer.mediaType!, content: blob.toString("utf8") };
}

/** The compose file of an https:// .tar.gz archive (archive-package.ts); manifestDigest is the archive's sha256. */
async function readArchivePackage(services: Services, url: string, digest: string | undefined, signal: AbortSignal) {
  const { archive, archiveDigest } = await fetchArchive(services, url, digest, signal);
  const { content } = composeFromArchive(archive);
  if (content.length > MAX_COMPOSE_BYTES) throw new ArchiveError(`its compose file is larger than ${MAX_COMPOSE_BYTES / 1024 / 1024} MiB`);
  return { manifestDigest: archiveDigest, digest: sha256(content), mediaType: ARCHIVE_COMPOSE_TYPE, content: content.toString("utf8") };
}

/**
 * A pull grant for the images of the organization's private registries (those holding a
 * credential) that the file names; null when it names none (public images are pulled by the
 * engine directly). Scoped to this device and certificate, this deployment and those repositories.
 */
async function grantFor(
  services: Services, device: DevicePrincipal, deploymentId: string, images: string[],
  registries: Array<{ id: string; url: string; credentialSealed: string | null }>,
): Promise<PullGrantAnswer | null> {
  const scopes = new Map<string, PullScope & { reference: string }>();
  for (const image of images) {
    const ref = splitImageReference(image);
    const registry = ref && registries.find((r) => r.credentialSealed && new URL(r.url).host.toLowerCase() === ref.host);
    if (!ref || !registry) continue;
    scopes.set(`${registry.id}/${ref.repository}`, { registryId: registry.id, repository: ref.repository, reference: `${ref.host}/${ref.repository}` });
  }
  if (!scopes.size) return null;
  const expiresAt = new Date(Date.now() + PULL_GRANT_SECONDS * 1000);
  const repositories = [...scopes.values()];
  const token = await signPullGrant(pullGrantKey(services.jwtKey), {
    deviceId: device.deviceId, organizationId: device.organizationId, fingerprint: device.fingerprint, deploymentId,
    repositories: repositories.map(({ registryId, repository }) => ({ registryId, repository })),
  }, expiresAt);
  return {
    username: PULL_GRANT_USER, token, expiresAt: expiresAt.toISOString(),
    repositories: repositories.map((r) => ({ repository: r.reference, proxy: `${r.registryId}/${r.repository}` })),
  };
}
