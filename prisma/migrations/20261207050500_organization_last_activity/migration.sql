-- Organization."lastActivityAt" was never written before this version (Platform → Organizations
-- said "never" for every organization). From now on the service writes it when a member, an
-- API key or a device acts in the organization (src/trpc/activity.ts); here it gets what the
-- database already knows: the newest audit entry filed under the organization and the newest
-- contact of its devices. One statement over each table, grouped by organization.
UPDATE "Organization" o
   SET "lastActivityAt" = GREATEST(a.at, d.at)
  FROM "Organization" base
  LEFT JOIN (SELECT "organizationId", max("createdAt") AS at FROM "AuditEntry" WHERE "organizationId" IS NOT NULL GROUP BY "organizationId") a
         ON a."organizationId" = base.id
  LEFT JOIN (SELECT "organizationId", max("lastSeenAt") AS at FROM "Device" GROUP BY "organizationId") d
         ON d."organizationId" = base.id
 WHERE o.id = base.id
   AND o."lastActivityAt" IS NULL
   AND (a.at IS NOT NULL OR d.at IS NOT NULL);
