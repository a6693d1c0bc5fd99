// One architecture vocabulary: the names manifests use, what agents report for each, and the
// words the console shows, kept equal to the manifest's own list (the SQL that counts and
// decides eligibility is generated from the same table: test/http/groups/groups.test.ts).
import { describe, expect, it } from "vitest";
import { CPU_ARCHITECTURES } from "../../src/modules/applications/manifest/rules.js";
import {
  architectureLabel,
  MANIFEST_ARCHITECTURES,
  normalizeArchitecture,
  REPORTED_ARCHITECTURES,
  reportedArchitectureLabel,
} from "../../src/modules/groups/architectures.js";

describe("architecture vocabulary", () => {
  it("names exactly the architectures manifests may name", () => {
    expect([...MANIFEST_ARCHITECTURES].sort()).toEqual([...CPU_ARCHITECTURES].sort());
  });

  it("reads what agents report as manifests name it, armv7 and armv7l as arm", () => {
    const cases: Array<[string | null, string | null]> = [
      ["x86_64", "amd64"], ["aarch64", "arm64"], ["armv7l", "arm"], ["armv7", "arm"], ["ARMv7l", "arm"], ["armv6l", "arm"],
      ["arm", "arm"], ["riscv64", "riscv64"], ["mips", "mips"], [null, null],
    ];
    for (const [reported, name] of cases) expect(normalizeArchitecture(reported), String(reported)).toBe(name);
    // No reported name belongs to two architectures.
    const all = Object.values(REPORTED_ARCHITECTURES).flat();
    expect(new Set(all).size).toBe(all.length);
  });

  it("shows an architecture with what devices report for it, and a device's report with its manifest name", () => {
    expect(architectureLabel("arm")).toBe("arm (armv7, armv6)");
    expect(architectureLabel("amd64")).toBe("amd64 (x86_64)");
    expect(architectureLabel("unknown")).toBe("no architecture reported");
    expect(reportedArchitectureLabel("armv7")).toBe("armv7 (arm)");
    expect(reportedArchitectureLabel("arm64")).toBe("arm64");
    expect(reportedArchitectureLabel(null)).toBe("architecture unknown");
  });
});
