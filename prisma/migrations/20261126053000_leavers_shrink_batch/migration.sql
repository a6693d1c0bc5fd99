-- A device that leaves a continuous staged deployment (its labels no longer match, onLeave
-- remove, or it had not been told yet) leaves its batch as well: the batch in flight or a
-- planned batch shrinks by it, as a late joiner grows it (docs/deployments.md, "Continuous
-- targets"). Before, a leaver of the batch in flight stayed in its size, and a batch whose
-- success threshold counted it could only time out. The rest of the function is unchanged.
CREATE OR REPLACE FUNCTION "fleet_continuous_membership"() RETURNS trigger LANGUAGE plpgsql AS $fn$
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
           d."rolloutState", d."currentBatch", d."disruptionBudget" IS NOT NULL AS "budgeted",
           d."strategy" ->> 'type' = 'staged' AS "staged", cb."state" AS "currentBatchState", nb."index" IS NOT NULL AS "nextPlanned",
           (p."archs" IS NULL OR jsonb_typeof(p."archs") <> 'array' OR p."archs" ? (CASE lower(c."arch")
              WHEN 'x86_64' THEN 'amd64' WHEN 'x64' THEN 'amd64' WHEN 'aarch64' THEN 'arm64' WHEN 'armv8' THEN 'arm64'
              WHEN 'armv7l' THEN 'arm' WHEN 'armv7' THEN 'arm' WHEN 'armhf' THEN 'arm' WHEN 'armv6l' THEN 'arm'
              ELSE lower(c."arch") END)) AS "eligible"
      FROM jsonb_to_recordset(changed) AS c("id" uuid, "organizationId" uuid, "labels" jsonb, "oldLabels" jsonb, "arch" text)
      JOIN "Deployment" d ON d."organizationId" = c."organizationId" AND d."continuous" AND d."status" = 'running'
                         AND c."labels" @> d."labelSelector" AND NOT c."oldLabels" @> d."labelSelector"
      LEFT JOIN "DeploymentBatch" cb ON cb."deploymentId" = d."id" AND cb."index" = d."currentBatch"
      LEFT JOIN "DeploymentBatch" nb ON nb."deploymentId" = d."id" AND nb."index" = d."currentBatch" + 1 AND nb."state" = 'planned'
      LEFT JOIN LATERAL (
        SELECT x -> 'requiredResources' -> 'cpu' -> 'architectures' AS "archs"
          FROM "ApplicationVersion" v, jsonb_array_elements(v."profiles") x
         WHERE v."id" = d."applicationVersionId" AND x ->> 'id' = d."profileId" LIMIT 1
      ) p ON true
  ), placed AS (
    -- Where a joiner goes (docs/deployments.md, "Continuous targets"). All-at-once: told at once.
    -- Staged: into the batch in flight (told at once unless the rollout is paused), else into the
    -- next planned batch (told when it starts), else, the rollout completed, no batch yet: the
    -- rollout job gathers those into a late-joiner batch (rollout.ts). An aborted or failed
    -- rollout dispatches nothing: the joiner is cancelled.
    SELECT c.*,
           CASE WHEN NOT c."eligible" OR NOT c."staged" THEN NULL
                WHEN c."currentBatchState" = 'in_progress' THEN c."currentBatch"
                WHEN c."nextPlanned" THEN c."currentBatch" + 1 END AS "batchIndex",
           CASE WHEN NOT c."eligible" THEN 'skipped'
                WHEN c."staged" AND c."rolloutState" IN ('aborted', 'failed') THEN 'cancelled'
                ELSE 'pending' END AS "state",
           c."eligible" AND (NOT c."staged" OR (c."currentBatchState" = 'in_progress' AND c."rolloutState" IN ('canary', 'in_progress'))) AS "go"
      FROM candidates c
  ), joined AS (
    INSERT INTO "DeploymentDevice" AS e ("deploymentId", "deviceId", "organizationId", "batchIndex", "state", "desiredAction", "heldForBudget",
                                        "reason", "dispatchedAt", "stateChangedAt", "lateJoiner")
    SELECT c."deploymentId", c."deviceId", c."organizationId", c."batchIndex", c."state",
           CASE WHEN c."go" AND NOT c."budgeted" THEN 'install' END,
           c."go" AND c."budgeted",
           CASE WHEN NOT c."eligible" THEN 'joined, not eligible: its architecture is not supported by the profile'
                WHEN c."state" = 'cancelled' THEN 'joined, not dispatched: the rollout is ' || c."rolloutState"
                WHEN c."go" OR (c."staged" AND c."rolloutState" = 'paused' AND c."batchIndex" = c."currentBatch") THEN 'joined: its labels match the selector now'
                WHEN c."batchIndex" IS NOT NULL THEN 'joined: its labels match the selector now; waits for batch ' || c."batchIndex"
                ELSE 'joined: its labels match the selector now; waits for a late-joiner batch' END,
           CASE WHEN c."go" AND NOT c."budgeted" THEN now() AT TIME ZONE 'UTC' END,
           now() AT TIME ZONE 'UTC', true
      FROM placed c
    ON CONFLICT ("deploymentId", "deviceId") DO UPDATE
       SET "state" = EXCLUDED."state", "desiredAction" = EXCLUDED."desiredAction", "heldForBudget" = EXCLUDED."heldForBudget",
           "reason" = EXCLUDED."reason", "dispatchedAt" = EXCLUDED."dispatchedAt", "stateChangedAt" = EXCLUDED."stateChangedAt",
           "batchIndex" = EXCLUDED."batchIndex", "lateJoiner" = true, "leftAt" = NULL, "attempt" = 1, "retryAt" = NULL, "message" = NULL
     -- a device that kept it (onLeave keep) and comes back has nothing to do
     WHERE e."desiredAction" IS DISTINCT FROM 'install'
    RETURNING e."deploymentId", e."deviceId", e."organizationId", e."desiredAction", e."state", e."batchIndex"
  ), grown AS (
    -- a joiner of a batch is judged with it: the batch grows, its thresholds stay percents of its size
    UPDATE "DeploymentBatch" b SET "size" = b."size" + g."n"
      FROM (SELECT "deploymentId", "batchIndex", count(*)::int AS "n" FROM joined WHERE "batchIndex" IS NOT NULL AND "state" = 'pending' GROUP BY 1, 2) g
     WHERE b."deploymentId" = g."deploymentId" AND b."index" = g."batchIndex"
    RETURNING 1
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
           CASE WHEN j."state" = 'skipped' THEN ' (not eligible: architecture)'
                WHEN j."state" = 'cancelled' THEN ' (not dispatched: the rollout is ' || c."rolloutState" || ')'
                WHEN j."state" = 'pending' AND j."batchIndex" IS NULL AND c."staged" THEN ' (waits for a late-joiner batch)'
                WHEN j."state" = 'pending' AND j."batchIndex" IS DISTINCT FROM c."currentBatch" AND c."staged" THEN ' (waits for batch ' || j."batchIndex" || ')'
                ELSE '' END,
         jsonb_build_object('deploymentId', j."deploymentId", 'selector', c."labelSelector", 'state', j."state", 'batch', j."batchIndex"), 'system', NULL, now() AT TIME ZONE 'UTC'
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
      RETURNING e."deploymentId", e."deviceId", e."organizationId", e."desiredAction", e."batchIndex"
    ), shrunk AS (
      -- a leaver that does not keep it leaves its batch too: the batch in flight (or a planned
      -- one) shrinks by it, so its thresholds stay reachable by the devices still in it
      UPDATE "DeploymentBatch" b SET "size" = GREATEST(b."size" - g."n", 0)
        FROM (SELECT "deploymentId", "batchIndex", count(*)::int AS "n" FROM left_entries
               WHERE "batchIndex" IS NOT NULL AND "desiredAction" IS DISTINCT FROM 'install' GROUP BY 1, 2) g
       WHERE b."deploymentId" = g."deploymentId" AND b."index" = g."batchIndex" AND b."state" IN ('planned', 'in_progress')
      RETURNING 1
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

