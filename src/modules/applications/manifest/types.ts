/** The shapes a parsed application manifest takes once it is read and admitted. */

export type ProfileType = "compose" | "helm";

export type CpuArchitecture = "amd64" | "arm64" | "arm" | "riscv64";

export interface ComponentProperties {
  /** absent: a compose or Helm package; system-image: a RAUC bundle replacing the device's root file system (docs/os-updates.md) */
  type?: "system-image";
  repository: string;
  revision: string;
  wait?: boolean;
  timeout?: string;
  /** for an https:// archive: its sha256 (`sha256:<64 hex>`), checked before the compose file is read; for a system image (required): the bundle's */
  digest?: string;
  /** removal takes the compose project's volumes down too (default: they stay) */
  removeVolumes?: boolean;
}

export interface ManifestComponent {
  name: string;
  properties: ComponentProperties;
}

export interface RequiredResources {
  cpu?: { cores: number; architectures?: CpuArchitecture[] };
  memory?: string;
  storage?: string;
}

export interface DeploymentProfile {
  id: string;
  type: ProfileType;
  description?: string;
  components: ManifestComponent[];
  requiredResources?: RequiredResources;
}

export interface ParameterTarget {
  pointer: string;
  components: string[];
}

export type { ParameterSchema, ParameterType } from "./parameter-rules.js";
import type { ParameterSchema } from "./parameter-rules.js";

export interface ManifestParameter {
  /** the default value */
  value?: unknown;
  targets: ParameterTarget[];
  description?: string;
  /** a deployment must give a value (no default) */
  required?: boolean;
  /** stored encrypted, never returned by the API, handed only to the device */
  secret?: boolean;
  schema?: ParameterSchema;
}

export interface ManifestVendor {
  name: string;
  site?: string;
}

/** The manifest-level fields, the same in every flavor (./header.ts reads them). */
export interface ManifestHeader {
  apiVersion: string;
  /** metadata.id: the application's key within its organization. */
  appKey: string;
  name: string;
  version: string;
  description?: string;
  category?: string;
  tags: string[];
  /** The icon path exactly as written, relative to the manifest's folder. */
  iconPath?: string;
  vendor?: ManifestVendor;
}

export interface NormalizedManifest extends ManifestHeader {
  /** Only the profiles that passed admission. */
  profiles: DeploymentProfile[];
  parameters: Record<string, ManifestParameter>;
}

/** The file could not be read as a manifest at all: an error of the sync. */
export interface ManifestError {
  kind: "error";
  path: string;
  message: string;
}

/** A readable manifest with no admissible profile: reported, not an error. */
export interface ManifestRejected {
  kind: "rejected";
  path: string;
  reason: string;
}

export interface ManifestAdmitted {
  kind: "admitted";
  path: string;
  manifest: NormalizedManifest;
  /** Dropped profiles and ignored optional fields, in words. */
  warnings: string[];
}

export type ManifestParseResult = ManifestError | ManifestRejected | ManifestAdmitted;
