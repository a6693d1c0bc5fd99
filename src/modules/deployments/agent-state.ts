// The agent's side of deployments: what a heartbeat answers (the desired state) and what
// happens to the progress a device reports.
//
// Lock order: a report updates the device's own entries in one statement (autocommit), and
// only then, in a separate transaction per deployment, locks the deployment to judge its
// rollout. Operator moves lock the deployment first and the entries after; holding an entry
// while waiting for a deployment would deadlock against them.
import { Prisma } from "../../generated/prisma/client.js";
import type { Services } from "../../services.js";
import type { DesiredDeployment } from "../agent/schemas.js";
import type { DeploymentProgress, HeartbeatDevice } from "../agent/desired-state.js";
import type { ManifestParameter, DeploymentProfile } from "../applications/manifest/index.js";
import { UTC_NOW } from "../devices/sql.js";
import { DeploymentEvents } from "./events.js";
import { openSecrets, renderParameters } from "./parameters.js";
import { evaluateDeployment } from "./service.js";
import { mayChangeVerdict } from "./verdict-precheck.js";
import { dispatchDueRetries } from "./dispatch.js";
import type { RetryOptions } from "./options.js";
import type { MaintenanceWindows } from "../rollout-engine/options.js";
import { isTimeZone } from "../rollout-engine/window-rules.js";
import { timeZoneFor, windowPhase } from "../rollout-engine/windows.js";
import { nextRetryAt } from "./retry.js";
import { ROLLED_BACK_TO } from "./upgrade.js";
import { withDeviceVariables } from "../config-layers/parameters.js";
import { systemBundlePath } from "../agent/system-bundle-path.js";

interface DesiredRow {
  deploymentId: string;
  attempt: number;
  retryDue: boolean;
  maintenanceWindows: MaintenanceWindows | null;
  labels: Record<string, string> | null;
  windowOpensAt: Date | null;
  action: "install" | "remove";
  applicationId: string;
  version: string;
  profileId: string;
  parameters: Record<string, unknown>;
  secretParameters: string | null;
  profiles: DeploymentProfile[];
  declared: Record<string, ManifestParameter>;
}

/**
 * The deployments the device must run or remove, oldest first; one indexed query. A retry
 * that fell due since the last heartbeat is handed out first (and the desired state read
 * again), so the device does not wait for the rollout job's next tick.
 */
export async function desiredDeploymentsOf(
  services: Pick<Services, "prisma" | "secrets">, device: HeartbeatDevice, variables: () => Record<string, string> | null = () => null,
): Promise<DesiredDeployment[]> {
  let rows = await readDesired(services, device);
  if (rows.some((r) => r.retryDue) && (await dispatchDueRetries(services.prisma, { deviceId: device.id })).length) rows = await readDesired(services, device);
  const windows = await applyWindows(services, device, rows);
  return rows.map((row) => {
    const profile = row.profiles.find((p) => p.id === row.profileId) ?? { id: row.profileId, type: "compose", components: [] };
    // A removal needs no parameters, and secrets are only opened for devices that run them.
    const values = row.action === "install" ? { ...row.parameters, ...openSecrets(services.secrets, row.secretParameters) } : {};
    return {
      deploymentId: row.deploymentId,
      action: row.action,
      attempt: row.attempt,
      ...windows.get(row.deploymentId)!,
      applicationId: row.applicationId,
      version: row.version,
      profile: { id: profile.id, type: profile.type, components: profile.components },
      // `{{ vars.NAME }}` takes the device's configuration variables (config-layers/parameters.ts)
      ...(row.action === "install" ? withDeviceVariables(renderParameters(row.declared, values, profile.components.map((c) => c.name)), variables) : { parameters: {} }),
      ...(row.action === "install" ? systemImageOf(profile, row.deploymentId) : {}),
    };
  });
}

/**
 * The OS update a profile's system-image component asks (docs/os-updates.md): where the device
 * fetches the bundle (an https:// repository directly; an oci:// one from the service's relay,
 * agent/bundle-route.ts, which reads the organization's registry with its credential), its
 * digest and version.
 */
function systemImageOf(profile: DeploymentProfile, deploymentId: string): { systemImage?: NonNullable<DesiredDeployment["systemImage"]> } {
  const image = profile.components.find((c) => c.properties.type === "system-image");
  if (!image) return {};
  const repository = image.properties.repository ?? "";
  const direct = /^https?:\/\//.test(repository);
  return {
    systemImage: {
      component: image.name, repository, url: direct ? repository : null,
      ...(direct ? {} : { bundlePath: systemBundlePath(deploymentId, image.name) }),
      digest: image.properties.digest ?? "", version: image.properties.revision ?? "",
    },
  };
}

/**
 * What the device may do now with each deployment under its maintenance windows (windows.ts,
 * read in the device's own time zone when its label names one). The entries that move into or
 * out of waiting for their window are stored (windowOpensAt, counted as waiting_for_window) in
 * one statement, only when that changed.
 */
async function applyWindows(services: Pick<Services, "prisma">, device: HeartbeatDevice, rows: DesiredRow[]) {
  const now = Date.now();
  const result = new Map<string, { window: "open" | "download-only" | "closed"; nextWindowAt: string | null }>();
  const changed: Array<{ deploymentId: string; opensAt: string | null }> = [];
  for (const row of rows) {
    if (!row.maintenanceWindows) {
      result.set(row.deploymentId, { window: "open", nextWindowAt: null });
      continue;
    }
    const { phase, nextWindowAt } = windowPhase(row.maintenanceWindows, timeZoneFor(row.maintenanceWindows, row.labels, isTimeZone), now);
    // A removal is not downloaded ahead: it waits for the window.
    const window = phase === "install" ? "open" : phase === "download" && row.action === "install" ? "download-only" : "closed";
    result.set(row.deploymentId, { window, nextWindowAt: nextWindowAt === null ? null : new Date(nextWindowAt).toISOString() });
    const opensAt = window === "open" || nextWindowAt === null ? null : nextWindowAt;
    if ((row.windowOpensAt?.getTime() ?? null) !== opensAt) {
      changed.push({ deploymentId: row.deploymentId, opensAt: opensAt === null ? null : new Date(opensAt).toISOString().replace("Z", "") });
    }
  }
  if (changed.length) {
    await services.prisma.$executeRaw`
      UPDATE "DeploymentDevice" dd SET "windowOpensAt" = c."opensAt"
        FROM jsonb_to_recordset(${JSON.stringify(changed)}::jsonb) AS c("deploymentId" text, "opensAt" timestamp)
       WHERE dd."deviceId" = ${device.id}::uuid AND dd."deploymentId" = c."deploymentId"::uuid`;
  }
  return result;
}

function readDesired(services: Pick<Services, "prisma">, device: HeartbeatDevice): Promise<DesiredRow[]> {
  return services.prisma.$queryRaw<DesiredRow[]>`
    SELECT dd."deploymentId"::text AS "deploymentId", dd."desiredAction" AS "action", dd."attempt", (dd."retryAt" <= ${UTC_NOW}) AS "retryDue",
           dd."windowOpensAt", d."maintenanceWindows", dev."labels",
           d."applicationId"::text AS "applicationId",
           d."version", d."profileId", d."parameters", d."secretParameters", v."profiles", v."parameters" AS "declared"
      FROM "DeploymentDevice" dd
      JOIN "Deployment" d ON d."id" = dd."deploymentId"
      JOIN "ApplicationVersion" v ON v."id" = d."applicationVersionId"
      JOIN "Device" dev ON dev."id" = dd."deviceId"
     WHERE dd."deviceId" = ${device.id}::uuid AND dd."desiredAction" IS NOT NULL
     ORDER BY d."createdAt", d."id"`;
}

/**
 * For the deployments a device reports failed: when it gets its next attempt (retry.ts), for
 * the attempt it is on. One indexed query, only when something failed.
 */
async function retriesFor(services: Pick<Services, "prisma">, device: HeartbeatDevice, failed: string[]): Promise<Map<string, { attempt: number; at: string }>> {
  const result = new Map<string, { attempt: number; at: string }>();
  if (!failed.length) return result;
  const rows = await services.prisma.$queryRaw<Array<{ deploymentId: string; attempt: number; retry: RetryOptions }>>`
    SELECT dd."deploymentId"::text AS "deploymentId", dd."attempt", d."retry"
      FROM "DeploymentDevice" dd JOIN "Deployment" d ON d."id" = dd."deploymentId"
     WHERE dd."deviceId" = ${device.id}::uuid AND dd."desiredAction" = 'install' AND d."retry" IS NOT NULL AND d."status" = 'running'
       AND dd."deploymentId" IN (SELECT jsonb_array_elements_text(${JSON.stringify(failed)}::jsonb)::uuid)`;
  const now = new Date();
  for (const row of rows) {
    const at = nextRetryAt(row.attempt, row.retry, now, Math.random());
    // the column holds UTC without a zone
    if (at) result.set(row.deploymentId, { attempt: row.attempt, at: at.toISOString().replace("Z", "") });
  }
  return result;
}

/**
 * For the entry `dd`: the digest of its profile's system image when the device has not booted it
 * after a committed update (DeviceSystem); NULL when there is none, or it runs.
 */
const SYSTEM_IMAGE_NOT_BOOTED = Prisma.raw(`(
  SELECT si."digest"
    FROM (SELECT jsonb_path_query_first(v."profiles", '$[*] ? (@.id == $p).components[*] ? (@.properties.type == "system-image").properties.digest',
                                        jsonb_build_object('p', sd."profileId")) #>> '{}' AS "digest"
            FROM "Deployment" sd JOIN "ApplicationVersion" v ON v."id" = sd."applicationVersionId"
           WHERE sd."id" = dd."deploymentId") si
   WHERE NOT EXISTS (SELECT 1 FROM "DeviceSystem" s
                      WHERE s."deviceId" = dd."deviceId" AND s."lastOutcome" = 'committed' AND s."lastDigest" = si."digest" AND s."bootedDigest" = si."digest"))`);

interface ChangedEntry {
  deploymentId: string;
  organizationId: string;
  state: string;
  message: string | null;
  /** an entry the device reported (judged); false: one the report moved (a release rolled back to on the device, or left again) */
  reported: boolean;
}

/** States that can change a rollout's verdict or finish a removal. */
const DECISIVE_STATES = new Set(["running", "failed", "removed"]);

/**
 * Records the device's reports in one statement: only for deployments it was given, only
 * states that fit what it was asked (install: pending..failed; remove: removing, removed,
 * failed, or still running with the message of a lease that defers it), only when something changed. `running` and `failed` also write the device's
 * version history. Then the touched deployments are judged, each under its own lock.
 *
 * A failed upgrade that the device rolled back itself (`rolledBackTo`: the release it brought
 * up again, agent/src/workloads.ts) makes the entry of that release `running` again: the entry
 * the upgrade superseded, of the deployment named, or for an upgrade in place of its
 * predecessor (upgrade.ts) holding that version. It stays out of the desired state (the device
 * is still told the upgrade, and its retries); once the device reports installing, running or
 * removing another deployment of the application, it is `superseded` again.
 */
export async function recordDeploymentProgress(services: Pick<Services, "prisma" | "logger"> & object, device: HeartbeatDevice, reports: DeploymentProgress[]): Promise<void> {
  // The last report of a deployment wins when a batch names it twice.
  const latest = [...new Map(reports.map((r) => [r.deploymentId, {
    deploymentId: r.deploymentId, state: r.state, message: r.message ?? null, attempt: r.attempt ?? null,
    restoredId: r.state === "failed" ? r.rolledBackTo?.deploymentId ?? null : null, restoredVersion: r.state === "failed" ? r.rolledBackTo?.version ?? null : null,
  }])).values()];
  const retries = await retriesFor(services, device, latest.filter((r) => r.state === "failed").map((r) => r.deploymentId));
  const rows = latest.map((r) => ({ ...r, retryAt: retries.get(r.deploymentId)?.at ?? null, retryOf: retries.get(r.deploymentId)?.attempt ?? null }));
  const changed = await services.prisma.$queryRaw<ChangedEntry[]>`
    WITH sent AS (
      SELECT * FROM jsonb_to_recordset(${JSON.stringify(rows)}::jsonb)
          AS r("deploymentId" text, "state" text, "message" text, "attempt" int, "retryAt" timestamp, "retryOf" int, "restoredId" text, "restoredVersion" text)
    ), judged AS (
      -- a system image's deployment runs only once the device booted that image and committed it
      -- (DeviceSystem, written from the same heartbeat before): until then "running" is "installing"
      SELECT r.*, CASE WHEN r."state" = 'running' AND dd."desiredAction" = 'install' THEN ${SYSTEM_IMAGE_NOT_BOOTED} END AS "notBooted"
        FROM sent r LEFT JOIN "DeploymentDevice" dd ON dd."deviceId" = ${device.id}::uuid AND dd."deploymentId" = r."deploymentId"::uuid
    ), reported AS (
      SELECT "deploymentId", CASE WHEN "notBooted" IS NULL THEN "state" ELSE 'installing' END AS "state",
             CASE WHEN "notBooted" IS NULL THEN "message"
                  ELSE 'the agent reports it installed, but the device has not reported the system image ' || "notBooted" || ' booted and committed' END AS "message",
             "attempt", "retryAt", "retryOf", "restoredId", "restoredVersion"
        FROM judged
    ), updated AS (
      UPDATE "DeploymentDevice" dd
         SET "state" = r."state", "message" = left(r."message", 2000), "stateChangedAt" = ${UTC_NOW},
             "desiredAction" = CASE WHEN r."state" = 'removed' THEN NULL ELSE dd."desiredAction" END,
             -- a retry computed for the attempt the device is on (a stale computation sets none)
             "retryAt" = CASE WHEN r."state" = 'failed' AND dd."desiredAction" = 'install' AND r."retryOf" = dd."attempt" THEN r."retryAt" END
        FROM reported r
       WHERE dd."deviceId" = ${device.id}::uuid AND dd."organizationId" = ${device.organizationId}::uuid
         AND dd."deploymentId" = r."deploymentId"::uuid
         -- a report about an earlier attempt (late, or repeated) changes nothing
         AND (r."attempt" IS NULL OR r."attempt" = dd."attempt")
         AND ((dd."desiredAction" = 'install' AND r."state" IN ('pending', 'downloading', 'installing', 'running', 'failed'))
           OR (dd."desiredAction" = 'remove' AND r."state" IN ('removing', 'removed', 'failed'))
           -- a removal a lease on the device defers: still running, only its message changes
           OR (dd."desiredAction" = 'remove' AND r."state" = 'running' AND dd."state" = 'running'))
         AND (dd."state" <> r."state" OR dd."message" IS DISTINCT FROM left(r."message", 2000))
      RETURNING dd."deploymentId", dd."organizationId", dd."state", dd."message", dd."dispatchedAt", dd."desiredAction", dd."attempt"
    ), history AS (
      INSERT INTO "DeviceVersionHistory" ("id", "organizationId", "deviceId", "deploymentId", "deploymentName", "applicationId",
                                          "applicationVersionId", "version", "profileId", "outcome", "succeeded", "message", "attempt", "startedAt", "finishedAt")
      SELECT gen_random_uuid(), d."organizationId", ${device.id}::uuid, d."id", d."name", d."applicationId", d."applicationVersionId",
             d."version", d."profileId", u."state", u."state" = 'running', u."message", u."attempt", COALESCE(u."dispatchedAt", ${UTC_NOW}), ${UTC_NOW}
        FROM updated u JOIN "Deployment" d ON d."id" = u."deploymentId"
       WHERE u."state" IN ('running', 'failed') AND u."desiredAction" = 'install'
      ON CONFLICT ("deviceId", "deploymentId", "attempt") DO UPDATE
         SET "outcome" = EXCLUDED."outcome", "succeeded" = EXCLUDED."succeeded", "message" = EXCLUDED."message", "finishedAt" = EXCLUDED."finishedAt",
             "applicationVersionId" = EXCLUDED."applicationVersionId", "version" = EXCLUDED."version", "profileId" = EXCLUDED."profileId"
      RETURNING 1
    ), restored AS (
      UPDATE "DeploymentDevice" p
         SET "state" = 'running', "stateChangedAt" = ${UTC_NOW}, "reason" = ${ROLLED_BACK_TO} || t."name" || ' ' || t."version" || ' failed there'
        FROM (
          SELECT DISTINCT ON (u."deploymentId") e."deploymentId" AS "entryOf", fd."name", fd."version"
            FROM updated u
            JOIN reported r ON r."deploymentId"::uuid = u."deploymentId"
            JOIN "Deployment" fd ON fd."id" = u."deploymentId"
            JOIN "DeploymentDevice" e ON e."deviceId" = ${device.id}::uuid AND e."desiredAction" IS NULL AND e."state" = 'superseded'
            JOIN "Deployment" ed ON ed."id" = e."deploymentId" AND ed."organizationId" = ${device.organizationId}::uuid
                                AND ed."applicationId" = fd."applicationId" AND ed."version" = r."restoredVersion"
                                AND (ed."id" = r."restoredId"::uuid OR ed."upgradedToId" = r."restoredId"::uuid)
           WHERE u."state" = 'failed' AND u."desiredAction" = 'install' AND r."restoredId" IS NOT NULL
           ORDER BY u."deploymentId", e."stateChangedAt" DESC
        ) t
       WHERE p."deviceId" = ${device.id}::uuid AND p."deploymentId" = t."entryOf"
      RETURNING p."deploymentId", p."organizationId", p."state", p."message"
    ), moved_on AS (
      UPDATE "DeploymentDevice" p
         SET "state" = 'superseded', "stateChangedAt" = ${UTC_NOW}, "reason" = 'superseded by deployment ' || fd."name"
        FROM updated u JOIN "Deployment" fd ON fd."id" = u."deploymentId", "Deployment" pd
       WHERE u."state" IN ('installing', 'running', 'removing', 'removed')
         AND p."deviceId" = ${device.id}::uuid AND p."desiredAction" IS NULL AND p."state" = 'running' AND p."deploymentId" <> u."deploymentId"
         AND p."reason" LIKE ${ROLLED_BACK_TO + "%"}
         AND pd."id" = p."deploymentId" AND pd."applicationId" = fd."applicationId"
      RETURNING p."deploymentId", p."organizationId", p."state", p."message"
    )
    SELECT "deploymentId"::text AS "deploymentId", "organizationId"::text AS "organizationId", "state", "message", true AS "reported" FROM updated
    UNION ALL
    SELECT "deploymentId"::text, "organizationId"::text, "state", "message", false FROM restored
    UNION ALL
    SELECT "deploymentId"::text, "organizationId"::text, "state", "message", false FROM moved_on`;
  if (!changed.length) return;

  const events = new DeploymentEvents();
  for (const entry of changed) events.progress(entry.organizationId, entry.deploymentId, device.id, entry.state, entry.message);
  const toJudge = [...new Set(changed.filter((e) => e.reported && DECISIVE_STATES.has(e.state)).map((e) => e.deploymentId))];
  for (const deploymentId of toJudge) {
    try {
      // Most reports cannot change the verdict: they skip the deployment's row lock.
      if (!(await mayChangeVerdict(services.prisma, device.organizationId, deploymentId))) continue;
      await services.prisma.$transaction((tx) => evaluateDeployment(tx, device.organizationId, deploymentId, events, { deviceId: device.id }));
    } catch (err) {
      // The report is stored; the rollout job judges the deployment again shortly.
      services.logger.warn({ err: (err as Error).message, deploymentId }, "judging a deployment after a device report failed; the rollout job retries");
    }
  }
  events.publishTo(services);
}
