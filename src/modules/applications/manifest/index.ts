/** Application manifests: parsing, admission and the helpers the registry sync needs. */
export { parseManifest } from "./parse-manifest.js";
export { parameterValueProblem } from "./parameters.js";
export { resolveManifestRelativePath } from "./paths.js";
export { manifestDigest } from "./digest.js";
export {
  CPU_ARCHITECTURES,
  MANIFEST_FLAVORS,
  MAX_MANIFEST_BYTES,
  PROFILE_TYPES,
} from "./rules.js";
export type {
  ComponentProperties,
  CpuArchitecture,
  DeploymentProfile,
  ManifestAdmitted,
  ManifestComponent,
  ManifestError,
  ManifestParameter,
  ParameterSchema,
  ManifestParseResult,
  ManifestRejected,
  ManifestVendor,
  NormalizedManifest,
  ParameterTarget,
  ProfileType,
  RequiredResources,
} from "./types.js";
