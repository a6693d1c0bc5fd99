/** The constants behind the manifest rules of shared/design/manifest.md, in one place. */
import type { CpuArchitecture, ProfileType } from "./types.js";

/** The (apiVersion, kind) pairs we read: ours and Margo's ApplicationDescription. */
export const MANIFEST_FLAVORS: ReadonlyArray<{ apiVersion: string; kind: string }> = [
  { apiVersion: "fleet.app/v1alpha1", kind: "ApplicationManifest" },
  { apiVersion: "margo.org/v1-alpha1", kind: "ApplicationDescription" },
];

export const APP_KEY_PATTERN = /^[a-z0-9-]{1,200}$/;
export const COMPONENT_NAME_PATTERN = /^[a-z0-9-]+$/;
/** The scheme is the whole rule; something must follow it. */
export const REPOSITORY_PATTERN = /^(oci|https):\/\/\S+$/;
/** Go duration style restricted to whole hours, minutes and seconds, e.g. 5m0s. */
/** An https:// archive's digest, as OCI writes one. */
export const DIGEST_PATTERN = /^sha256:[0-9a-f]{64}$/;
export const TIMEOUT_PATTERN = /^(\d+h)?(\d+m)?(\d+s)?$/;
export const MEMORY_PATTERN = /^[0-9]+(Ki|Mi|Gi)$/;
export const STORAGE_PATTERN = /^[0-9]+(Ki|Mi|Gi|Ti)$/;

/** Declared profile type -> the type we run ("helm.v3" is Margo's name for helm). */
export const PROFILE_TYPES: Readonly<Record<string, ProfileType>> = {
  compose: "compose",
  helm: "helm",
  "helm.v3": "helm",
};

export const CPU_ARCHITECTURES: readonly CpuArchitecture[] = ["amd64", "arm64", "arm", "riscv64"];

/** A manifest is a small text file; anything larger is refused before parsing. */
export const MAX_MANIFEST_BYTES = 1024 * 1024;
/** Aliases allowed when expanding the YAML: guards against "billion laughs". */
export const MAX_YAML_ALIAS_COUNT = 100;
