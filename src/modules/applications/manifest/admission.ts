/**
 * Step 2 of ingest: admission of one deployment profile (rules of shared/design/manifest.md).
 * The first broken rule fails the profile and is reported in words that name it.
 */
import { describeValue, isRecord, nonEmptyString } from "./describe-value.js";
import type { ParametersResult } from "./parameters.js";
import {
  COMPONENT_NAME_PATTERN,
  CPU_ARCHITECTURES,
  DIGEST_PATTERN,
  MEMORY_PATTERN,
  PROFILE_TYPES,
  REPOSITORY_PATTERN,
  STORAGE_PATTERN,
  TIMEOUT_PATTERN,
} from "./rules.js";
import type {
  ComponentProperties,
  CpuArchitecture,
  DeploymentProfile,
  ManifestComponent,
  ProfileType,
  RequiredResources,
} from "./types.js";

export interface AdmissionContext {
  /** The manifest's parameters: their targets must name components of the profile. */
  parameters: ParametersResult;
  /** Ids of the profiles declared before this one: a profile id must be unique. */
  earlierProfileIds: ReadonlySet<string>;
}

export type AdmissionOutcome =
  | { admitted: true; profile: DeploymentProfile; warnings: string[] }
  | { admitted: false; profileLabel: string; rule: string };

/** Thrown inside this module only, so that each check reads as a straight line. */
class BrokenRule extends Error {}

function broken(rule: string): never {
  throw new BrokenRule(rule);
}

/** `profile "id"`, or `profile #2` (1-based) when it has no usable id. */
function profileLabel(raw: unknown, index: number): string {
  const id = isRecord(raw) ? nonEmptyString(raw.id) : undefined;
  return id === undefined ? `profile #${index + 1}` : `profile "${id}"`;
}

export function admitProfile(raw: unknown, index: number, context: AdmissionContext): AdmissionOutcome {
  const label = profileLabel(raw, index);
  const warnings: string[] = [];
  try {
    const profile = readProfile(raw, context, warnings);
    return { admitted: true, profile, warnings: warnings.map((warning) => `${label}: ${warning}`) };
  } catch (error) {
    if (error instanceof BrokenRule) return { admitted: false, profileLabel: label, rule: error.message };
    throw error;
  }
}

function readProfile(raw: unknown, context: AdmissionContext, warnings: string[]): DeploymentProfile {
  if (!isRecord(raw)) broken(`must be a mapping (got ${describeValue(raw)})`);
  const id = nonEmptyString(raw.id) ?? broken("id is required");
  if (context.earlierProfileIds.has(id)) broken("id is already used by an earlier profile");
  const type = readProfileType(raw.type);
  const components = readComponents(raw.components, warnings);
  checkSystemImages(type, components);
  const requiredResources = isAbsent(raw.requiredResources)
    ? undefined
    : readRequiredResources(raw.requiredResources);
  checkParameterTargets(context.parameters, components);

  const profile: DeploymentProfile = { id, type, components };
  if (typeof raw.description === "string" && raw.description.trim() !== "") profile.description = raw.description;
  else if (!isAbsent(raw.description)) warnings.push("description ignored: it must be a string");
  if (requiredResources) profile.requiredResources = requiredResources;
  return profile;
}

function readProfileType(raw: unknown): ProfileType {
  if (isAbsent(raw)) broken("type is required (compose, helm or helm.v3)");
  if (typeof raw !== "string") broken(`type must be compose, helm or helm.v3 (got ${describeValue(raw)})`);
  const type = Object.hasOwn(PROFILE_TYPES, raw) ? PROFILE_TYPES[raw] : undefined;
  return type ?? broken(`type ${describeValue(raw)} is not supported`);
}

function readComponents(raw: unknown, warnings: string[]): ManifestComponent[] {
  if (!Array.isArray(raw) || raw.length === 0) broken("at least one component is required");
  const seenNames = new Set<string>();
  return raw.map((component: unknown, index) => {
    const read = readComponent(component, index, warnings);
    if (seenNames.has(read.name)) broken(`component "${read.name}": name must be unique in the profile`);
    seenNames.add(read.name);
    return read;
  });
}

function readComponent(raw: unknown, index: number, warnings: string[]): ManifestComponent {
  if (!isRecord(raw)) broken(`component #${index + 1} must be a mapping (got ${describeValue(raw)})`);
  const { name } = raw;
  if (typeof name !== "string" || !COMPONENT_NAME_PATTERN.test(name)) {
    broken(`component #${index + 1}: name must match ${COMPONENT_NAME_PATTERN.source} (got ${describeValue(name)})`);
  }
  const label = `component "${name}"`;
  const properties = isRecord(raw.properties) ? raw.properties : {};

  const { repository } = properties;
  if (isAbsent(repository)) broken(`${label}: repository is required`);
  if (typeof repository !== "string" || !REPOSITORY_PATTERN.test(repository)) {
    broken(`${label}: repository must use oci:// or https://`);
  }
  const revision = nonEmptyString(properties.revision) ?? broken(`${label}: revision is required`);
  const read: ComponentProperties = { repository, revision };
  const systemImage = readComponentType(properties.type, label) === "system-image";
  if (systemImage) read.type = "system-image";

  if (typeof properties.wait === "boolean") read.wait = properties.wait;
  else if (!isAbsent(properties.wait)) warnings.push(`${label}: wait ignored: it must be true or false`);

  const { timeout } = properties;
  if (!isAbsent(timeout)) {
    if (typeof timeout !== "string" || timeout === "" || !TIMEOUT_PATTERN.test(timeout)) {
      broken(`${label}: timeout must be a duration like 5m0s (got ${describeValue(timeout)})`);
    }
    read.timeout = timeout;
  }

  const { digest } = properties;
  // a system image is pinned by its digest whatever its scheme: the device checks the bundle's bytes against it
  if (systemImage && isAbsent(digest)) broken(`${label}: a system-image needs digest: the RAUC bundle's sha256 (sha256:<64 hex>), which the device checks`);
  if (!isAbsent(digest)) {
    if (typeof digest !== "string" || !DIGEST_PATTERN.test(digest)) {
      broken(`${label}: digest must be sha256: and 64 lowercase hex digits (got ${describeValue(digest)})`);
    }
    if (!systemImage && !repository.startsWith("https://")) broken(`${label}: digest is for an https:// archive (an oci:// package is checked by its registry's digests)`);
    read.digest = digest;
  }

  if (typeof properties.removeVolumes === "boolean") read.removeVolumes = properties.removeVolumes;
  else if (!isAbsent(properties.removeVolumes)) warnings.push(`${label}: removeVolumes ignored: it must be true or false`);
  return { name, properties: read };
}

/** A component's `type`: absent for a compose or Helm package; `system-image` for a RAUC bundle (docs/os-updates.md). */
function readComponentType(raw: unknown, label: string): "system-image" | undefined {
  if (isAbsent(raw)) return undefined;
  if (raw !== "system-image") broken(`${label}: type must be system-image (a RAUC bundle) or absent (a compose or Helm package) (got ${describeValue(raw)})`);
  return "system-image";
}

/** A system image replaces the device's root file system: one per profile, and only where the fleet agent installs (compose). */
function checkSystemImages(type: ProfileType, components: ManifestComponent[]): void {
  const images = components.filter((c) => c.properties.type === "system-image");
  if (images.length > 1) broken(`components ${images.map((c) => `"${c.name}"`).join(", ")}: at most one system-image per profile (a device has one root file system)`);
  if (images.length && type !== "compose") broken(`component "${images[0].name}": a system-image belongs in a compose profile (the fleet agent installs it)`);
}

function readRequiredResources(raw: unknown): RequiredResources {
  if (!isRecord(raw)) broken(`requiredResources must be a mapping (got ${describeValue(raw)})`);
  const resources: RequiredResources = {};
  if (!isAbsent(raw.cpu)) resources.cpu = readCpu(raw.cpu);
  if (!isAbsent(raw.memory)) resources.memory = readQuantity(raw.memory, "memory", MEMORY_PATTERN);
  if (!isAbsent(raw.storage)) resources.storage = readQuantity(raw.storage, "storage", STORAGE_PATTERN);
  return resources;
}

function readCpu(raw: unknown): NonNullable<RequiredResources["cpu"]> {
  if (!isRecord(raw)) broken(`requiredResources: cpu must be a mapping (got ${describeValue(raw)})`);
  const { cores, architectures } = raw;
  if (typeof cores !== "number" || !Number.isFinite(cores) || cores <= 0) {
    broken(`requiredResources: cpu.cores must be a number greater than 0 (got ${describeValue(cores)})`);
  }
  if (isAbsent(architectures)) return { cores };
  if (!Array.isArray(architectures)) {
    broken(`requiredResources: cpu.architectures must be a list (got ${describeValue(architectures)})`);
  }
  const known = new Set<CpuArchitecture>();
  for (const architecture of architectures as unknown[]) {
    const match = CPU_ARCHITECTURES.find((candidate) => candidate === architecture);
    if (!match) {
      broken(
        `requiredResources: architecture ${describeValue(architecture)} is not supported (${CPU_ARCHITECTURES.join(", ")})`,
      );
    }
    known.add(match);
  }
  return { cores, architectures: [...known] };
}

function readQuantity(raw: unknown, field: "memory" | "storage", pattern: RegExp): string {
  if (typeof raw !== "string" || !pattern.test(raw)) {
    broken(`requiredResources: ${field} must match ${pattern.source} (got ${describeValue(raw)})`);
  }
  return raw;
}

/** Every parameter target must name components that exist in this profile. */
function checkParameterTargets(parameters: ParametersResult, components: ManifestComponent[]): void {
  if (!parameters.ok) broken(parameters.rule);
  const names = new Set(components.map((component) => component.name));
  for (const [parameterName, parameter] of Object.entries(parameters.parameters)) {
    for (const target of parameter.targets) {
      const missing = target.components.find((component) => !names.has(component));
      if (missing !== undefined) {
        broken(`parameter "${parameterName}": target component "${missing}" is not a component of this profile`);
      }
    }
  }
}

/** YAML `key:` with nothing after it reads as null: treated like a key not written. */
function isAbsent(value: unknown): value is undefined | null {
  return value === undefined || value === null;
}
