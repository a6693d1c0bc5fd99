/**
 * Reads one manifest file into an error, a rejection or an admitted, normalized manifest
 * (the three outcomes of ingest in shared/design/manifest.md). Pure: no I/O, no database.
 */
import { admitProfile } from "./admission.js";
import { describeValue, isRecord } from "./describe-value.js";
import { readManifestHeader } from "./header.js";
import { readParameters } from "./parameters.js";
import type { DeploymentProfile, ManifestParseResult } from "./types.js";
import { loadManifestYaml } from "./yaml-source.js";

/**
 * @param yamlText the file's content
 * @param path where the file was found (repository path or OCI reference); echoed in the result
 */
export function parseManifest(yamlText: string, path: string): ManifestParseResult {
  const loaded = loadManifestYaml(yamlText);
  if (!loaded.ok) return { kind: "error", path, message: loaded.message };
  const document = loaded.value;
  if (!isRecord(document)) {
    return { kind: "error", path, message: `manifest must be a YAML mapping (got ${describeValue(document)})` };
  }

  const header = readManifestHeader(document);
  if (!header.ok) return { kind: "error", path, message: header.message };

  const declared = document.deploymentProfiles;
  if (declared === undefined || declared === null || (Array.isArray(declared) && declared.length === 0)) {
    return { kind: "rejected", path, reason: "the manifest declares no deployment profile" };
  }
  if (!Array.isArray(declared)) {
    return { kind: "rejected", path, reason: `deploymentProfiles must be a list (got ${describeValue(declared)})` };
  }

  const parameters = readParameters(document.parameters);
  const earlierProfileIds = new Set<string>();
  const profiles: DeploymentProfile[] = [];
  const profileWarnings: string[] = [];
  const failures: string[] = [];
  declared.forEach((rawProfile: unknown, index) => {
    const outcome = admitProfile(rawProfile, index, { parameters, earlierProfileIds });
    if (outcome.admitted) {
      profiles.push(outcome.profile);
      profileWarnings.push(...outcome.warnings);
    } else {
      failures.push(`${outcome.profileLabel}: ${outcome.rule}`);
    }
    // Every declared id counts, admitted or not: a later profile may not reuse it.
    if (isRecord(rawProfile) && typeof rawProfile.id === "string") earlierProfileIds.add(rawProfile.id);
  });

  if (profiles.length === 0 || !parameters.ok) {
    return { kind: "rejected", path, reason: failures.join("; ") };
  }
  return {
    kind: "admitted",
    path,
    manifest: { ...header.header, profiles, parameters: parameters.parameters },
    warnings: [
      ...header.warnings,
      ...failures.map((failure) => `dropped ${failure}`),
      ...profileWarnings,
    ],
  };
}
