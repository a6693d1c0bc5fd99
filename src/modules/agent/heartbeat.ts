// The heartbeat write path. Each heartbeat is one row of a multi-row statement ("group
// commit"): heartbeats that arrive while the previous statement is running wait for the next
// one, which carries all of them (docs/benchmarks.md). The statement, per row, re-checks the
// caller's certificate (unrevoked, unexpired, organization active), locks the device row
// (rows in id order, so that two batches never deadlock), marks it online (or error),
// records facts and lastSeenAt, and, only when the status changed, writes the activity
// entry. It commits asynchronously. The caller is answered only after its row committed: a
// revoked certificate, a deleted device or a suspended organization is refused by the very
// heartbeat that follows, and the status change is stored before the answer, as with one
// statement per heartbeat. No read-modify-write race: the previous status is read under the
// row lock of the same statement.
import { metricsOf, observedWriter } from "../metrics/registry.js";
import type { RawDatabase } from "../../db/adapters.js";
import type { DevicePrincipal } from "../../trpc/device-auth.js";
import { refusalAfterRecheck } from "../../trpc/device-auth.js";
import type { Services } from "../../services.js";
import { eventBusOf, type DeviceStatus } from "../../lib/events.js";
import { desiredStateOf, type DeploymentProgress } from "./desired-state.js";
import { splitFacts, type DesiredDeployment, type Facts } from "./schemas.js";
import { perService } from "../../lib/per-service.js";
import { REMOTE_ACCESS_SQL, remoteAccessAnswer, type RemoteAccessFlags } from "../remote-sessions/heartbeat.js";
import type { Offer } from "../remote-sessions/schemas.js";
import { GroupCommit, type GroupCommitOptions } from "../../lib/group-commit.js";
import { admittedSql } from "./admission-gate.js";
import { actionsExchange } from "../device-actions/agent-exchange.js";
import type { ActionReport, DeviceActionEntry } from "../device-actions/schemas.js";
import { CONFIGURATION_SQL, configurationExchange, type ConfigurationFlags } from "../config-layers/heartbeat.js";
import type { ConfigurationAnswer, ConfigurationReport } from "../config-layers/schemas.js";
import { recordSystemReport, type SystemReport } from "../devices/system.js";

export interface HeartbeatWrite {
  status: "online" | "error";
  /** with status error: what is wrong */
  message?: string;
  facts?: Facts;
  /** reported deployment states: a failed one's message is the reason of an error without its own */
  deployments?: { state: string; message?: string }[];
}

/** Why a device reports `error` (kept while it stays in error without saying why again); null when online. */
export function statusReasonOf(input: HeartbeatWrite): string | null {
  if (input.status !== "error") return null;
  const failed = input.deployments?.find((d) => d.state === "failed" && d.message?.trim());
  return (input.message || failed?.message?.trim() || null)?.slice(0, 500) ?? null;
}

export interface HeartbeatResult {
  previous: DeviceStatus;
  current: DeviceStatus;
  /** the device has deployments to install or remove (its desired state is not empty) */
  hasDesired: boolean;
  /** false while the device awaits approval in the enrollment lobby: it is then given nothing (admission-gate.ts) */
  admitted: boolean;
  /** the device has device actions to be handed (docs/actions.md) */
  hasActions: boolean;
  /** remote access is on for the organization (null: off): its selector, the labels it needs, whether an offer waits */
  remote: RemoteAccessFlags | null;
  /** the organization has configuration layers or the device had a configuration (null: neither; docs/configuration.md) */
  configuration: ConfigurationFlags | null;
}

interface Row {
  i: number;
  device: string;
  org: string;
  fingerprint: string;
  status: string;
  reason: string | null;
  os: string | null;
  arch: string | null;
  agentVersion: string | null;
  hardwareModel: string | null;
  ipAddress: string | null;
  facts: Record<string, unknown> | null;
}

// One statement for any number of heartbeats: the rows travel as one JSON parameter (a text
// cast to jsonb, so that node-postgres and PGlite pass it alike) and the statement text never
// changes with the batch size.
export const HEARTBEAT_STATEMENT = /* sql */ `
  WITH async_commit AS (
    -- This statement's own transaction commits without waiting for the WAL flush: a crash
    -- may lose the last fraction of a second of heartbeats (the next ones redo them), never
    -- half of one. Measured on PostgreSQL 15 here: 3-4 ms -> 0.1-0.4 ms per heartbeat
    -- (docs/benchmarks.md). Local to this statement's transaction; nothing else is affected.
    SELECT set_config('synchronous_commit', 'off', true) AS "setting"
  ), input AS (
    SELECT * FROM jsonb_to_recordset($1::text::jsonb) AS x(
      "i" int, "device" uuid, "org" uuid, "fingerprint" text, "status" text, "reason" text, "os" text, "arch" text,
      "agentVersion" text, "hardwareModel" text, "ipAddress" text, "facts" jsonb)
  ), prev AS (
    SELECT d."id", d."status" AS "previous", d."statusReason" AS "previousReason", x.*
      FROM input x JOIN "Device" d ON d."id" = x."device"
     -- The organization is compared with IS NOT DISTINCT FROM (the same as "=" for these
     -- non-null ids), which no index serves, and its status is looked up by the input's id:
     -- nothing then leads the planner from the organization to its devices, and each device
     -- is found by its primary key whatever the statistics say. With "=", a table not
     -- analyzed since a fleet enrolled (autovacuum comes a minute later at best) made the
     -- planner read every device of the organization for each heartbeat: 4 times the
     -- database's CPU (docs/benchmarks.md, "The heartbeat statement's plan").
     WHERE d."organizationId" IS NOT DISTINCT FROM x."org"
       AND EXISTS (SELECT 1 FROM async_commit a WHERE a."setting" = 'off')
       AND EXISTS (SELECT 1 FROM "DeviceCertificate" c
                    WHERE c."fingerprint" = x."fingerprint" AND c."deviceId" = d."id"
                      AND NOT c."revoked" AND c."notAfter" > (now() AT TIME ZONE 'UTC'))
       AND EXISTS (SELECT 1 FROM "Organization" o WHERE o."id" = x."org" AND o."status" = 'active')
     ORDER BY d."id"
     FOR UPDATE OF d
  ), upd AS (
    UPDATE "Device" d SET
      "status" = p."status",
      "statusChangedAt" = CASE WHEN p."previous" = p."status" THEN d."statusChangedAt" ELSE (now() AT TIME ZONE 'UTC') END,
      -- an error heartbeat without a reason keeps the one it had while it stays in error
      "statusReason" = CASE WHEN p."status" <> 'error' THEN NULL
                            ELSE COALESCE(p."reason", CASE WHEN p."previous" = 'error' THEN p."previousReason" END) END,
      "updatedAt" = CASE WHEN p."previous" = p."status" THEN d."updatedAt" ELSE (now() AT TIME ZONE 'UTC') END,
      "lastSeenAt" = (now() AT TIME ZONE 'UTC'),
      "os" = COALESCE(p."os", d."os"),
      "arch" = COALESCE(p."arch", d."arch"),
      "agentVersion" = COALESCE(p."agentVersion", d."agentVersion"),
      "hardwareModel" = COALESCE(p."hardwareModel", d."hardwareModel"),
      "ipAddress" = COALESCE(p."ipAddress", d."ipAddress"),
      "facts" = COALESCE(p."facts", d."facts")
    FROM prev p
    WHERE d."id" = p."id"
    RETURNING p."i", d."id", d."organizationId", p."previous", d."status" AS "current", d."statusReason" AS "reason",
              d."name", d."labels", d."facts", d."os", d."arch", d."agentVersion", d."hardwareModel", d."ipAddress"
  ), logged AS (
    INSERT INTO "DeviceEvent" ("organizationId", "deviceId", "type", "message", "data", "actorType", "actorId", "createdAt")
    SELECT u."organizationId", u."id", 'status_changed', 'Status changed from ' || u."previous" || ' to ' || u."current" || COALESCE(': ' || u."reason", ''),
           jsonb_strip_nulls(jsonb_build_object('from', u."previous", 'to', u."current", 'reason', 'heartbeat', 'message', u."reason")),
           'device', u."id"::text, (now() AT TIME ZONE 'UTC')
      FROM upd u WHERE u."previous" <> u."current"
    RETURNING 1
  )
  -- Whether the device is told to install or remove anything: most devices are not, and for
  -- them the heartbeat needs no desired-state query (DeploymentDevice(deviceId, desiredAction)).
  SELECT u."i", u."previous", u."current", ${admittedSql('u."id"')} AS "admitted",
         EXISTS (SELECT 1 FROM "DeploymentDevice" dd WHERE dd."deviceId" = u."id" AND dd."desiredAction" IS NOT NULL) AS "hasDesired",
         EXISTS (SELECT 1 FROM "DeviceAction" da WHERE da."deviceId" = u."id" AND da."state" IN ('pending', 'delivered', 'deferred')) AS "hasActions",
         ${REMOTE_ACCESS_SQL} AS "remote",
         ${CONFIGURATION_SQL("u")} AS "configuration"
    FROM upd u`;

function rowOf(i: number, device: DevicePrincipal, input: HeartbeatWrite, sourceIp: string | null): Row {
  const { named, rest } = splitFacts(input.facts);
  return {
    i,
    device: device.deviceId,
    org: device.organizationId,
    fingerprint: device.fingerprint,
    status: input.status,
    reason: statusReasonOf(input),
    os: named.os ?? null,
    arch: named.arch ?? null,
    agentVersion: named.agentVersion ?? null,
    hardwareModel: named.hardwareModel ?? null,
    // the source address when the agent reports none
    ipAddress: named.ipAddress ?? sourceIp,
    // facts replace the previous free-form facts when the agent sends any; named facts
    // (columns) change only when reported
    facts: input.facts ? rest : null,
  };
}

/**
 * Writes heartbeats of many devices in one statement; for each, its result, or null when the
 * device or its certificate is no longer valid (deleted, revoked, expired, organization not
 * active). Runs on the driver directly (`database.opened.raw`, the same pool or PGlite
 * instance Prisma uses), not through Prisma: on this path Prisma's per-query compilation was
 * a large share of the CPU a heartbeat costs. A device must appear at most once.
 */
export async function recordHeartbeats(
  raw: RawDatabase,
  items: { device: DevicePrincipal; input: HeartbeatWrite; sourceIp: string | null }[],
): Promise<(HeartbeatResult | null)[]> {
  const rows = items.map((item, i) => rowOf(i, item.device, item.input, item.sourceIp));
  const results: (HeartbeatResult | null)[] = items.map(() => null);
  for (const r of await raw.query<HeartbeatResult & { i: number }>(HEARTBEAT_STATEMENT, [JSON.stringify(rows)], { prepared: "fleet_heartbeats" })) {
    results[r.i] = { previous: r.previous, current: r.current, admitted: r.admitted === true, hasDesired: r.hasDesired === true, hasActions: r.hasActions === true, remote: r.remote ?? null, configuration: r.configuration ?? null };
  }
  return results;
}

/** One heartbeat in one statement (null: refused, see recordHeartbeats). */
export async function recordHeartbeat(raw: RawDatabase, device: DevicePrincipal, input: HeartbeatWrite, sourceIp: string | null): Promise<HeartbeatResult | null> {
  return (await recordHeartbeats(raw, [{ device, input, sourceIp }]))[0];
}

interface HeartbeatItem {
  device: DevicePrincipal;
  input: HeartbeatWrite;
  sourceIp: string | null;
}

export type HeartbeatWriterOptions = GroupCommitOptions;

/**
 * Heartbeats by group commit (src/lib/group-commit.ts): whatever arrives while a statement is
 * in flight goes out as the next one, each device at most once per statement (a second
 * heartbeat of a device waits for the next).
 */
export class HeartbeatWriter extends GroupCommit<HeartbeatItem, HeartbeatResult | null> {
  constructor(raw: RawDatabase, options?: HeartbeatWriterOptions) {
    super(
      { write: (items) => recordHeartbeats(raw, items), keyOf: (item) => item.device.deviceId },
      options ?? { maxInFlight: raw.kind === "pglite" ? 1 : 2, maxBatch: 500 },
    );
  }

  write(device: DevicePrincipal, input: HeartbeatWrite, sourceIp: string | null): Promise<HeartbeatResult | null> {
    return this.submit({ device, input, sourceIp });
  }
}

/** The writer of one running service. */
export const heartbeatWriterOf = perService((services: Services) => observedWriter(services, "heartbeat", new HeartbeatWriter(services.database.opened.raw)));

export interface HeartbeatInput extends HeartbeatWrite {
  deployments?: DeploymentProgress[];
  actions?: ActionReport[];
  configuration?: ConfigurationReport;
  system?: SystemReport;
}

export interface HeartbeatAnswer {
  heartbeatIntervalSeconds: number;
  deployments: DesiredDeployment[];
  actions?: DeviceActionEntry[];
  remoteAccess?: { enabled: boolean; pending: Offer[] };
  configuration?: ConfigurationAnswer;
}

/**
 * A heartbeat of an authenticated device, whichever way it came (the lean REST route of
 * src/modules/agent/heartbeat-route.ts or the tRPC procedure): write it, refuse it when the
 * statement's re-check failed (401, or 403 for a suspended organization), publish the status
 * change after it committed, record the reported deployment progress and answer the desired
 * state.
 */
export async function handleHeartbeat(services: Services, device: DevicePrincipal, input: HeartbeatInput, sourceIp: string | null): Promise<HeartbeatAnswer> {
  const result = await heartbeatWriterOf(services).write(device, input, sourceIp);
  // Revoked or expired since it was cached, device deleted, or organization suspended.
  if (!result) throw await refusalAfterRecheck(services, device);
  const { deviceId, organizationId } = device;
  if (input.deployments?.length) metricsOf(services)?.deploymentReports.inc(input.deployments.length);
  if (result.previous !== result.current) {
    eventBusOf(services).publish("device.status_changed", { organizationId, deviceId, from: result.previous, to: result.current, at: new Date().toISOString() });
  }
  // awaiting approval: visible, given nothing (its reports are about nothing it was given)
  if (!result.admitted) return { heartbeatIntervalSeconds: services.config.HEARTBEAT_INTERVAL_SECONDS, deployments: [] };
  // before the deployment reports: a system image's deployment is judged by what the device booted (agent-state.ts)
  if (input.system) await recordSystemReport(services.prisma, { id: deviceId, organizationId }, input.system);
  // device actions: only for a device that has some open or reports some (most have none)
  const exchanged = result.hasActions || input.actions?.length ? await actionsExchange(services, deviceId, input.actions) : null;
  const actions = exchanged?.entries ?? [];
  // configuration: only for an organization with layers or a device that had some (most have none)
  const configuration = result.configuration || input.configuration
    ? await configurationExchange(services, { id: deviceId, organizationId }, result.configuration, input.configuration, exchanged?.configuring)
    : null;
  return {
    heartbeatIntervalSeconds: services.config.HEARTBEAT_INTERVAL_SECONDS,
    // Reports may change the desired state (a confirmed removal, a rollout move): then it is read again.
    deployments: result.hasDesired || input.deployments?.length
      ? await desiredStateOf(services, { id: deviceId, organizationId }, input.deployments, configuration?.variables)
      : [],
    ...(actions.length ? { actions } : {}),
    ...(configuration?.answer ? { configuration: configuration.answer } : {}),
    ...(result.remote ? { remoteAccess: await remoteAccessAnswer(services, deviceId, result.remote) } : {}),
  };
}
