// One vocabulary for CPU architectures (pure: no import, so the console bundles it). Manifests
// name four (amd64, arm64, arm, riscv64); agents report what the kernel says (x86_64, aarch64,
// armv7l, armv7 ...). The service reads a reported name through this table everywhere it decides
// or counts (NORMALIZED_ARCH in ../devices/sql.ts is generated from it), and the console shows
// the same table in words ("arm (armv7, armv6)").

export const UNKNOWN_ARCHITECTURE = "unknown";

/** The architectures manifests name (src/modules/applications/manifest/rules.ts CPU_ARCHITECTURES). */
export const MANIFEST_ARCHITECTURES = ["amd64", "arm64", "arm", "riscv64"] as const;
export type ManifestArchitecture = (typeof MANIFEST_ARCHITECTURES)[number];

/** What agents report (lower case) for each architecture manifests name, besides the name itself. */
export const REPORTED_ARCHITECTURES: Record<ManifestArchitecture, readonly string[]> = {
  amd64: ["x86_64", "x64"],
  arm64: ["aarch64", "armv8", "armv8l"],
  arm: ["armv7l", "armv7", "armhf", "armv6l", "armv6"],
  riscv64: [],
};

/** How the console names an architecture: the manifest's name with what devices report for it. */
const SHOWN_AS: Record<ManifestArchitecture, string> = {
  amd64: "amd64 (x86_64)",
  arm64: "arm64 (aarch64)",
  arm: "arm (armv7, armv6)",
  riscv64: "riscv64",
};

/** A reported architecture as manifests name it; unknown names stay as reported (lower case), none is `null`. */
export function normalizeArchitecture(reported: string | null | undefined): string | null {
  if (!reported) return null;
  const name = reported.toLowerCase();
  const found = MANIFEST_ARCHITECTURES.find((arch) => arch === name || REPORTED_ARCHITECTURES[arch].includes(name));
  return found ?? name;
}

/** The words for an architecture as op 12 and the eligibility read count it ("arm (armv7, armv6)"). */
export function architectureLabel(arch: string): string {
  if (arch === UNKNOWN_ARCHITECTURE) return "no architecture reported";
  return (SHOWN_AS as Record<string, string>)[arch] ?? arch;
}

/** A device's reported architecture with the manifest's name when they differ ("armv7 (arm)"). */
export function reportedArchitectureLabel(reported: string | null | undefined): string {
  const arch = normalizeArchitecture(reported);
  if (!reported || !arch) return "architecture unknown";
  return arch === reported ? reported : `${reported} (${arch})`;
}
