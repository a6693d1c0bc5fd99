-- AlterTable
ALTER TABLE "DeploymentDevice" ADD COLUMN     "lateJoiner" BOOLEAN NOT NULL DEFAULT false,
ADD COLUMN     "leftAt" TIMESTAMP(3);

-- Continuous targets (docs/deployments.md, "Continuous targets"): a device's membership in the
-- running continuous deployments of its organization changes where its labels change and
-- where it enrolls, in the same statement's transaction, set-based: one statement-level
-- trigger run per INSERT or UPDATE of "Device", whatever the number of rows it touched.
-- Joiners get an install entry (held back by a disruption budget when there is one; skipped
-- when the profile does not support their architecture), taking over another deployment of
-- the application; leavers are asked to remove it (onLeave remove) or keep it (onLeave keep);
-- both are written to the device's activity.
CREATE FUNCTION "fleet_continuous_membership"() RETURNS trigger LANGUAGE plpgsql AS $fn$
DECLARE
  changed jsonb;
BEGIN
  IF NOT EXISTS (SELECT 1 FROM "Deployment" WHERE "continuous" AND "status" = 'running') THEN
    RETURN NULL;
  END IF;
  -- Heartbeats update devices without touching labels: they leave here.
  IF TG_OP = 'INSERT' THEN
    SELECT jsonb_agg(jsonb_build_object('id', n."id", 'organizationId', n."organizationId", 'labels', n."labels", 'oldLabels', '{}'::jsonb, 'arch', n."arch"))
      INTO changed FROM new_rows n;
  ELSE
    SELECT jsonb_agg(jsonb_build_object('id', n."id", 'organizationId', n."organizationId", 'labels', n."labels", 'oldLabels', o."labels", 'arch', n."arch"))
      INTO changed FROM new_rows n JOIN old_rows o ON o."id" = n."id" WHERE o."labels" IS DISTINCT FROM n."labels";
  END IF;
  IF changed IS NULL THEN
    RETURN NULL;
  END IF;

  WITH candidates AS (
    SELECT d."id" AS "deploymentId", d."name", d."applicationId", d."labelSelector", c."id" AS "deviceId", c."organizationId",
           d."currentBatch", d."disruptionBudget" IS NOT NULL AS "budgeted",
           (p."archs" IS NULL OR jsonb_typeof(p."archs") <> 'array' OR p."archs" ? (CASE lower(c."arch")
              WHEN 'x86_64' THEN 'amd64' WHEN 'x64' THEN 'amd64' WHEN 'aarch64' THEN 'arm64' WHEN 'armv8' THEN 'arm64'
              WHEN 'armv7l' THEN 'arm' WHEN 'armv7' THEN 'arm' WHEN 'armhf' THEN 'arm' WHEN 'armv6l' THEN 'arm'
              ELSE lower(c."arch") END)) AS "eligible"
      FROM jsonb_to_recordset(changed) AS c("id" uuid, "organizationId" uuid, "labels" jsonb, "oldLabels" jsonb, "arch" text)
      JOIN "Deployment" d ON d."organizationId" = c."organizationId" AND d."continuous" AND d."status" = 'running'
                         AND c."labels" @> d."labelSelector" AND NOT c."oldLabels" @> d."labelSelector"
      LEFT JOIN LATERAL (
        SELECT x -> 'requiredResources' -> 'cpu' -> 'architectures' AS "archs"
          FROM "ApplicationVersion" v, jsonb_array_elements(v."profiles") x
         WHERE v."id" = d."applicationVersionId" AND x ->> 'id' = d."profileId" LIMIT 1
      ) p ON true
  ), joined AS (
    INSERT INTO "DeploymentDevice" AS e ("deploymentId", "deviceId", "organizationId", "batchIndex", "state", "desiredAction", "heldForBudget",
                                        "reason", "dispatchedAt", "stateChangedAt", "lateJoiner")
    SELECT c."deploymentId", c."deviceId", c."organizationId", c."currentBatch",
           CASE WHEN c."eligible" THEN 'pending' ELSE 'skipped' END,
           CASE WHEN c."eligible" AND NOT c."budgeted" THEN 'install' END,
           c."eligible" AND c."budgeted",
           CASE WHEN c."eligible" THEN 'joined: its labels match the selector now'
                ELSE 'joined, not eligible: its architecture is not supported by the profile' END,
           CASE WHEN c."eligible" AND NOT c."budgeted" THEN now() AT TIME ZONE 'UTC' END,
           now() AT TIME ZONE 'UTC', true
      FROM candidates c
    ON CONFLICT ("deploymentId", "deviceId") DO UPDATE
       SET "state" = EXCLUDED."state", "desiredAction" = EXCLUDED."desiredAction", "heldForBudget" = EXCLUDED."heldForBudget",
           "reason" = EXCLUDED."reason", "dispatchedAt" = EXCLUDED."dispatchedAt", "stateChangedAt" = EXCLUDED."stateChangedAt",
           "lateJoiner" = true, "leftAt" = NULL, "attempt" = 1, "retryAt" = NULL, "message" = NULL
     -- a device that kept it (onLeave keep) and comes back has nothing to do
     WHERE e."desiredAction" IS DISTINCT FROM 'install'
    RETURNING e."deploymentId", e."deviceId", e."organizationId", e."desiredAction", e."state"
  ), superseded AS (
    UPDATE "DeploymentDevice" other
       SET "desiredAction" = NULL, "state" = 'superseded', "stateChangedAt" = now() AT TIME ZONE 'UTC',
           "reason" = 'superseded by deployment ' || c."name"
      FROM joined j JOIN candidates c ON c."deploymentId" = j."deploymentId" AND c."deviceId" = j."deviceId", "Deployment" od
     WHERE j."desiredAction" = 'install' AND other."deviceId" = j."deviceId" AND other."deploymentId" <> j."deploymentId"
       AND od."id" = other."deploymentId" AND od."applicationId" = c."applicationId" AND other."desiredAction" = 'install'
    RETURNING 1
  )
  INSERT INTO "DeviceEvent" ("organizationId", "deviceId", "type", "message", "data", "actorType", "actorId", "createdAt")
  SELECT j."organizationId", j."deviceId", 'deployment_joined',
         'Joined continuous deployment ' || c."name" || ': its labels match ' || c."labelSelector"::text ||
           CASE WHEN j."state" = 'skipped' THEN ' (not eligible: architecture)' ELSE '' END,
         jsonb_build_object('deploymentId', j."deploymentId", 'selector', c."labelSelector", 'state', j."state"), 'system', NULL, now() AT TIME ZONE 'UTC'
    FROM joined j JOIN candidates c ON c."deploymentId" = j."deploymentId" AND c."deviceId" = j."deviceId";

  IF TG_OP = 'UPDATE' THEN
    WITH leavers AS (
      SELECT d."id" AS "deploymentId", d."name", d."onLeave", d."labelSelector", c."id" AS "deviceId"
        FROM jsonb_to_recordset(changed) AS c("id" uuid, "organizationId" uuid, "labels" jsonb, "oldLabels" jsonb, "arch" text)
        JOIN "Deployment" d ON d."organizationId" = c."organizationId" AND d."continuous" AND d."status" = 'running'
                           AND c."oldLabels" @> d."labelSelector" AND NOT c."labels" @> d."labelSelector"
    ), left_entries AS (
      UPDATE "DeploymentDevice" e
         SET "leftAt" = now() AT TIME ZONE 'UTC', "stateChangedAt" = now() AT TIME ZONE 'UTC', "heldForBudget" = false, "retryAt" = NULL,
             "state" = CASE WHEN e."state" = 'pending' AND (e."desiredAction" IS NULL OR l."onLeave" = 'remove') THEN 'cancelled' ELSE e."state" END,
             "desiredAction" = CASE WHEN e."state" = 'pending' AND (e."desiredAction" IS NULL OR l."onLeave" = 'remove') THEN NULL
                                    WHEN l."onLeave" = 'remove' THEN 'remove' ELSE e."desiredAction" END,
             "reason" = CASE WHEN l."onLeave" = 'remove' OR e."desiredAction" IS NULL THEN 'left: its labels no longer match the selector'
                             ELSE 'left: its labels no longer match the selector; kept (onLeave keep)' END
        FROM leavers l
       WHERE e."deploymentId" = l."deploymentId" AND e."deviceId" = l."deviceId"
         AND (e."desiredAction" = 'install' OR (e."state" = 'pending' AND e."desiredAction" IS NULL))
      RETURNING e."deploymentId", e."deviceId", e."organizationId", e."desiredAction"
    )
    INSERT INTO "DeviceEvent" ("organizationId", "deviceId", "type", "message", "data", "actorType", "actorId", "createdAt")
    SELECT le."organizationId", le."deviceId", 'deployment_left',
           'Left continuous deployment ' || l."name" || ': its labels no longer match ' || l."labelSelector"::text ||
             CASE WHEN le."desiredAction" = 'remove' THEN '; asked to remove it' WHEN le."desiredAction" = 'install' THEN '; keeps it (onLeave keep)' ELSE '' END,
           jsonb_build_object('deploymentId', le."deploymentId", 'selector', l."labelSelector", 'onLeave', l."onLeave"), 'system', NULL, now() AT TIME ZONE 'UTC'
      FROM left_entries le JOIN leavers l ON l."deploymentId" = le."deploymentId" AND l."deviceId" = le."deviceId";
  END IF;
  RETURN NULL;
END
$fn$;

CREATE TRIGGER "fleet_continuous_membership_insert" AFTER INSERT ON "Device"
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION "fleet_continuous_membership"();
CREATE TRIGGER "fleet_continuous_membership_update" AFTER UPDATE ON "Device"
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION "fleet_continuous_membership"();
