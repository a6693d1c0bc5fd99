-- Platform power is no longer part of a wildcard: `*` and `<resource>:*` grant only the
-- permissions of the key's organization, and a platform key names platform:admin.
-- Existing keys keep the power they were meant to have (docs/identity.md, "Platform keys").

-- 1. `platform:*` was an explicit request for platform power (only Super Admins could name
--    it). It is no longer accepted as input, so it becomes what it meant: platform:admin.
UPDATE "ApiKey"
SET "permissions" = array_remove("permissions", 'platform:*')
      || CASE WHEN 'platform:admin' = ANY("permissions") THEN '{}'::text[] ELSE '{platform:admin}'::text[] END,
    "updatedAt" = now() AT TIME ZONE 'UTC'
WHERE 'platform:*' = ANY("permissions");

UPDATE "Role"
SET "permissions" = array_remove("permissions", 'platform:*')
      || CASE WHEN 'platform:admin' = ANY("permissions") THEN '{}'::text[] ELSE '{platform:admin}'::text[] END,
    "updatedAt" = now() AT TIME ZONE 'UTC'
WHERE 'platform:*' = ANY("permissions");

-- 2. A live `*` key of a Super Admin in the Super Admin's home organization was made as a
--    platform key (the bootstrap key is one): it names platform:admin from now on. The home
--    organization is the one a sign-in acts in by default (src/modules/auth/service.ts,
--    sessionOrganization): the oldest membership, or the oldest organization for a Super
--    Admin who is a member of none. A `*` key anywhere else stays inside its organization.
--    Each key so marked gets an audit entry in its organization.
WITH home AS (
  SELECT u."id" AS "userId",
         COALESCE(
           (SELECT m."organizationId" FROM "Membership" m WHERE m."userId" = u."id" ORDER BY m."createdAt", m."organizationId" LIMIT 1),
           (SELECT o."id" FROM "Organization" o ORDER BY o."createdAt", o."id" LIMIT 1)
         ) AS "organizationId"
  FROM "User" u
  WHERE u."isSuperAdmin"
), marked AS (
  UPDATE "ApiKey" k
  SET "permissions" = array_append(k."permissions", 'platform:admin'),
      "updatedAt" = now() AT TIME ZONE 'UTC'
  FROM home h
  WHERE k."createdById" = h."userId"
    AND k."organizationId" = h."organizationId"
    AND k."revokedAt" IS NULL
    AND '*' = ANY(k."permissions")
    AND NOT ('platform:admin' = ANY(k."permissions"))
  RETURNING k."id", k."organizationId", k."keyPrefix"
)
INSERT INTO "AuditEntry" ("id", "organizationId", "actorType", "actorId", "userId", "action", "entityType", "entityId", "outcome", "message", "createdAt")
SELECT gen_random_uuid(), "organizationId", 'system', NULL, NULL, 'apiKeys.platformNamed', 'api_key', "id"::text, 'success',
       'platform key (names platform:admin): a * key of a Super Admin in their home organization, marked when wildcards stopped including platform:admin (key ' || "keyPrefix" || '...)',
       now() AT TIME ZONE 'UTC'
FROM marked;
