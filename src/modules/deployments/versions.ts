// The application version and deployment profile a deployment refers to, read from the catalog.
import type { DbTx } from "../../db/client.js";
import { badRequest } from "../../trpc/errors.js";
import type { DeploymentProfile, ManifestParameter } from "../applications/manifest/index.js";

export interface ResolvedVersion {
  applicationId: string;
  applicationVersionId: string;
  version: string;
  profile: DeploymentProfile;
  parameters: Record<string, ManifestParameter>;
}

/** 400 naming the field when the application, version or profile is not in the organization's catalog. */
export async function resolveVersion(db: DbTx, organizationId: string, applicationId: string, version: string, profileId: string): Promise<ResolvedVersion> {
  const application = await db.application.findFirst({ where: { id: applicationId, organizationId }, select: { id: true } });
  if (!application) throw badRequest("applicationId: no such application in this organization");
  const row = await db.applicationVersion.findUnique({ where: { applicationId_version: { applicationId, version } } });
  if (!row) throw badRequest(`version: the application has no version ${version}`);
  const profiles = row.profiles as unknown as DeploymentProfile[];
  const profile = profiles.find((p) => p.id === profileId);
  if (!profile) {
    throw badRequest(`profileId: ${profileId} is not an admitted profile of version ${version} (admitted: ${profiles.map((p) => p.id).join(", ") || "none"})`);
  }
  return { applicationId, applicationVersionId: row.id, version: row.version, profile, parameters: row.parameters as unknown as Record<string, ManifestParameter> };
}

export async function profileOfDeployment(db: DbTx, deployment: { applicationVersionId: string; profileId: string }): Promise<DeploymentProfile> {
  const row = await db.applicationVersion.findUniqueOrThrow({ where: { id: deployment.applicationVersionId }, select: { profiles: true } });
  const profile = (row.profiles as unknown as DeploymentProfile[]).find((p) => p.id === deployment.profileId);
  if (!profile) throw badRequest(`profileId: ${deployment.profileId} is no longer a profile of this version`);
  return profile;
}
