// Health check of an OCI registry: GET /v2/ with the configured authentication (including the
// bearer token exchange). Network I/O runs with no transaction open; the result is written
// with the audit entry in one short transaction afterwards.
//   healthy   : /v2/ answered 200
//   unhealthy : the registry could not be reached, refused the credential, or answered another status
//   unknown   : the check could not be made (the address is refused by the outbound policy,
//               the stored credential cannot be read)
import { performance } from "node:perf_hooks";
import { OutboundRefused, outboundPolicyOf } from "../../../lib/outbound.js";
import { ResponseTooLarge } from "../../../lib/outbound-http.js";
import type { Services } from "../../../services.js";
import { writeAudit } from "../../../trpc/audit.js";
import { notFound } from "../../../trpc/errors.js";
import type { SyncTrigger } from "../git/sync.js";
import { createDistributionClient, RegistryError } from "./distribution.js";
import type { HealthCheckResult } from "./schemas.js";
import { findOciRegistry } from "./service.js";

export const HEALTH_CHECK_TIMEOUT_MS = 15_000;
const HEALTH_MAX_BYTES = 1024 * 1024;

type Probe = { status: HealthCheckResult["healthStatus"]; httpStatus?: number; message?: string };

/** A reason for a failed request that never carries a credential. */
export function describeRegistryFailure(err: unknown): string {
  if (err instanceof RegistryError) return err.message;
  if (err instanceof OutboundRefused) return `address refused: ${err.reason}`;
  if (err instanceof ResponseTooLarge) return err.message;
  const e = err as { name?: string; code?: string; message?: string };
  if (e?.name === "AbortError" || e?.name === "TimeoutError") return "the registry did not answer in time";
  if (e?.code === "ECONNREFUSED") return "connection refused";
  if (e?.code === "ENOTFOUND" || e?.code === "EAI_AGAIN") return "the host name could not be resolved";
  if (typeof e?.code === "string" && /CERT|SSL|TLS|SELF_SIGNED/.test(e.code)) return `TLS verification failed (${e.code})`;
  if (typeof e?.code === "string") return `the registry could not be reached (${e.code})`;
  return "the registry could not be reached";
}

export async function checkOciRegistryHealth(services: Services, organizationId: string, registryId: string, trigger: SyncTrigger): Promise<HealthCheckResult> {
  const registry = await findOciRegistry(services.prisma, organizationId, registryId);
  const started = performance.now();
  let probe: Probe;
  let credential: string | undefined;
  try {
    credential = registry.credentialSealed ? services.secrets.decrypt(registry.credentialSealed) : undefined;
  } catch {
    credential = undefined;
    probe = { status: "unknown", message: "the stored credential cannot be read; set it again" };
  }
  probe ??= await probeRegistry({
    url: registry.url, authType: registry.authType, credential, verifyTls: registry.verifyTls,
    policy: outboundPolicyOf(services.config), signal: AbortSignal.timeout(HEALTH_CHECK_TIMEOUT_MS), maxBytes: HEALTH_MAX_BYTES,
  });
  const responseTimeMs = Math.round(performance.now() - started);
  const now = new Date();
  await services.prisma.$transaction(async (tx) => {
    const { count } = await tx.ociRegistry.updateMany({ where: { id: registry.id, organizationId }, data: { healthStatus: probe.status, lastHealthCheck: now } });
    if (count === 0) throw notFound("OCI registry");
    await writeAudit(tx, trigger.request, trigger.principal, {
      action: "registries.oci.healthCheck",
      outcome: "success",
      organizationId,
      entityType: "oci_registry",
      entityId: registry.id,
      changes: { healthStatus: probe.status, httpStatus: probe.httpStatus ?? null },
      ...(probe.message ? { message: probe.message } : {}),
    });
  });
  return {
    registryId: registry.id,
    healthStatus: probe.status,
    lastHealthCheck: now.toISOString(),
    ...(probe.httpStatus !== undefined ? { httpStatus: probe.httpStatus } : {}),
    ...(probe.message ? { message: probe.message } : {}),
    responseTimeMs,
  };
}

async function probeRegistry(options: Parameters<typeof createDistributionClient>[0]): Promise<Probe> {
  const client = createDistributionClient(options);
  try {
    const res = await client.request("/v2/");
    await client.drain(res);
    if (res.status === 200) return { status: "healthy", httpStatus: 200 };
    if (res.status === 401 || res.status === 403) return { status: "unhealthy", httpStatus: res.status, message: "the registry refused the credential" };
    return { status: "unhealthy", httpStatus: res.status, message: `GET /v2/ answered ${res.status}` };
  } catch (err) {
    if (err instanceof OutboundRefused) return { status: "unknown", message: describeRegistryFailure(err) };
    return { status: "unhealthy", message: describeRegistryFailure(err), ...(err instanceof RegistryError && err.status ? { httpStatus: err.status } : {}) };
  }
}
