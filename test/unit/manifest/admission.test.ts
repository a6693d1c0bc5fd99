import { describe, expect, it } from "vitest";
import { parseManifest } from "../../../src/modules/applications/manifest/index.js";
import { component, manifestWith, profile } from "./fixtures.js";

/** Parses a manifest with the given profiles and returns the rejection reason. */
function rejectionReason(profiles: unknown, topLevel: Record<string, unknown> = {}): string {
  const result = parseManifest(manifestWith(profiles, topLevel), "apps/demo/app.yaml");
  if (result.kind !== "rejected") throw new Error(`expected rejected, got ${JSON.stringify(result)}`);
  expect(result.path).toBe("apps/demo/app.yaml");
  return result.reason;
}

function singleProfileReason(fields: Record<string, unknown>, topLevel: Record<string, unknown> = {}): string {
  return rejectionReason([profile("p", fields)], topLevel);
}

describe("admission: profile rules", () => {
  it.each([
    ["an unsupported type", { type: "docker" }, 'profile "p": type "docker" is not supported'],
    ["a missing type", { type: undefined }, 'profile "p": type is required (compose, helm or helm.v3)'],
    ["a non-text type", { type: ["compose"] }, 'profile "p": type must be compose, helm or helm.v3 (got a list)'],
    ["no components", { components: [] }, 'profile "p": at least one component is required'],
    ["components not a list", { components: "app" }, 'profile "p": at least one component is required'],
  ])("fails %s", (_case, fields, reason) => {
    expect(singleProfileReason(fields)).toBe(reason);
  });

  it("fails a profile without id, naming it by position", () => {
    expect(rejectionReason([{ type: "compose", components: [component("app")] }])).toBe(
      "profile #1: id is required",
    );
  });

  it("fails a profile whose id an earlier profile already uses", () => {
    const result = parseManifest(manifestWith([profile("same"), profile("same", { type: "helm" })]), "app.yaml");
    expect(result.kind).toBe("admitted");
    if (result.kind === "admitted") {
      expect(result.manifest.profiles).toHaveLength(1);
      expect(result.warnings).toEqual(['dropped profile "same": id is already used by an earlier profile']);
    }
  });
});

describe("admission: component rules", () => {
  it.each([
    ["an invalid name", [component("Vision_Gateway")], 'component #1: name must match ^[a-z0-9-]+$ (got "Vision_Gateway")'],
    ["a missing name", [{ properties: { repository: "oci://r/x", revision: "1" } }], "component #1: name must match ^[a-z0-9-]+$ (got nothing)"],
    ["a duplicate name", [component("app"), component("app")], 'component "app": name must be unique in the profile'],
    ["an http repository", [component("app", { repository: "http://registry.example/app" })], 'component "app": repository must use oci:// or https://'],
    ["a scheme-less repository", [component("app", { repository: "registry.example/app" })], 'component "app": repository must use oci:// or https://'],
    ["a missing repository", [{ name: "app", properties: { revision: "1.0.0" } }], 'component "app": repository is required'],
    ["a missing revision", [{ name: "app", properties: { repository: "oci://r/app" } }], 'component "app": revision is required'],
    ["an empty revision", [component("app", { revision: "" })], 'component "app": revision is required'],
    ["missing properties", [{ name: "app" }], 'component "app": repository is required'],
    ["a prose timeout", [component("app", { timeout: "5 minutes" })], 'component "app": timeout must be a duration like 5m0s (got "5 minutes")'],
    ["a fractional timeout", [component("app", { timeout: "1.5h" })], 'component "app": timeout must be a duration like 5m0s (got "1.5h")'],
    ["an empty timeout", [component("app", { timeout: "" })], 'component "app": timeout must be a duration like 5m0s (got "")'],
    ["a bare-number timeout", [component("app", { timeout: 300 })], 'component "app": timeout must be a duration like 5m0s (got "300")'],
    ["a digest without sha256:", [component("app", { repository: "https://files.example/app.tar.gz", digest: "ab".repeat(32) })], `component "app": digest must be sha256: and 64 lowercase hex digits (got "${"ab".repeat(32)}")`],
    ["a short digest", [component("app", { repository: "https://files.example/app.tar.gz", digest: "sha256:abc" })], 'component "app": digest must be sha256: and 64 lowercase hex digits (got "sha256:abc")'],
    ["a digest on an oci:// package", [component("app", { digest: `sha256:${"0".repeat(64)}` })], 'component "app": digest is for an https:// archive (an oci:// package is checked by its registry\'s digests)'],
  ])("fails %s", (_case, components, rule) => {
    expect(singleProfileReason({ components })).toBe(`profile "p": ${rule}`);
  });

  it("accepts Go-style timeouts", () => {
    for (const timeout of ["5m0s", "1h", "30s", "1h2m3s"]) {
      const result = parseManifest(manifestWith([profile("p", { components: [component("app", { timeout })] })]), "a");
      expect(result.kind, timeout).toBe("admitted");
    }
  });

  it("allows the same component name in two profiles", () => {
    const result = parseManifest(manifestWith([profile("a"), profile("b", { type: "helm" })]), "app.yaml");
    expect(result.kind).toBe("admitted");
  });

  it("keeps a non-boolean wait out of the manifest with a warning", () => {
    const result = parseManifest(manifestWith([profile("p", { components: [component("app", { wait: "yes" })] })]), "a");
    expect(result.kind).toBe("admitted");
    if (result.kind === "admitted") {
      expect(result.manifest.profiles[0]?.components[0]?.properties.wait).toBeUndefined();
      expect(result.warnings).toEqual(['profile "p": component "app": wait ignored: it must be true or false']);
    }
  });
});

describe("admission: an https:// archive's digest and removeVolumes", () => {
  it("keeps both in the component's properties", () => {
    const digest = `sha256:${"ab".repeat(32)}`;
    const result = parseManifest(manifestWith([profile("p", { components: [component("app", { repository: "https://files.example/app-1.0.0.tar.gz", digest, removeVolumes: true })] })]), "a");
    expect(result.kind).toBe("admitted");
    if (result.kind === "admitted") {
      expect(result.manifest.profiles[0]?.components[0]?.properties).toEqual({ repository: "https://files.example/app-1.0.0.tar.gz", revision: "1.0.0", digest, removeVolumes: true });
      expect(result.warnings).toEqual([]);
    }
  });

  it("keeps a non-boolean removeVolumes out with a warning (volumes then stay)", () => {
    const result = parseManifest(manifestWith([profile("p", { components: [component("app", { removeVolumes: "yes" })] })]), "a");
    expect(result.kind).toBe("admitted");
    if (result.kind === "admitted") {
      expect(result.manifest.profiles[0]?.components[0]?.properties.removeVolumes).toBeUndefined();
      expect(result.warnings).toEqual(['profile "p": component "app": removeVolumes ignored: it must be true or false']);
    }
  });
});

describe("admission: requiredResources rules", () => {
  const resources = (requiredResources: unknown) => singleProfileReason({ requiredResources });

  it.each([
    ["zero cores", { cpu: { cores: 0 } }, "requiredResources: cpu.cores must be a number greater than 0 (got 0)"],
    ["negative cores", { cpu: { cores: -1 } }, "requiredResources: cpu.cores must be a number greater than 0 (got -1)"],
    ["cpu without cores", { cpu: { architectures: ["arm64"] } }, "requiredResources: cpu.cores must be a number greater than 0 (got nothing)"],
    ["an unknown architecture", { cpu: { cores: 1, architectures: ["arm64", "sparc"] } }, 'requiredResources: architecture "sparc" is not supported (amd64, arm64, arm, riscv64)'],
    ["architectures not a list", { cpu: { cores: 1, architectures: "arm64" } }, 'requiredResources: cpu.architectures must be a list (got "arm64")'],
    ["memory in GB", { memory: "1GB" }, 'requiredResources: memory must match ^[0-9]+(Ki|Mi|Gi)$ (got "1GB")'],
    ["memory in Ti", { memory: "1Ti" }, 'requiredResources: memory must match ^[0-9]+(Ki|Mi|Gi)$ (got "1Ti")'],
    ["memory as a number", { memory: 1024 }, 'requiredResources: memory must match ^[0-9]+(Ki|Mi|Gi)$ (got "1024")'],
    ["storage with a fraction", { storage: "1.5Gi" }, 'requiredResources: storage must match ^[0-9]+(Ki|Mi|Gi|Ti)$ (got "1.5Gi")'],
    ["requiredResources not a mapping", ["cpu"], "requiredResources must be a mapping (got a list)"],
  ])("fails %s", (_case, requiredResources, rule) => {
    expect(resources(requiredResources)).toBe(`profile "p": ${rule}`);
  });

  it("admits well-formed resources, storage in Ti included", () => {
    const yaml = manifestWith([
      profile("p", { requiredResources: { cpu: { cores: 0.5, architectures: ["riscv64", "arm"] }, memory: "512Ki", storage: "2Ti" } }),
    ]);
    const result = parseManifest(yaml, "a");
    expect(result.kind === "admitted" && result.manifest.profiles[0]?.requiredResources).toEqual({
      cpu: { cores: 0.5, architectures: ["riscv64", "arm"] },
      memory: "512Ki",
      storage: "2Ti",
    });
  });
});

describe("admission: parameter rules", () => {
  it("fails a profile that lacks a component a parameter targets", () => {
    const parameters = { level: { value: "debug", targets: [{ pointer: "LOG_LEVEL", components: ["app", "worker"] }] } };
    expect(singleProfileReason({}, { parameters })).toBe(
      'profile "p": parameter "level": target component "worker" is not a component of this profile',
    );
  });

  it.each([
    ["targets missing", { level: { value: 1 } }, 'parameter "level": targets must be a list of { pointer, components }'],
    ["a target without pointer", { level: { targets: [{ components: ["app"] }] } }, 'parameter "level": every target needs a pointer'],
    ["a target without components", { level: { targets: [{ pointer: "X" }] } }, 'parameter "level": target "X" must list its components by name'],
    ["parameters as a list", ["level"], "parameters must be a mapping (got a list)"],
  ])("fails every profile on %s", (_case, parameters, rule) => {
    expect(rejectionReason([profile("a"), profile("b")], { parameters })).toBe(
      `profile "a": ${rule}; profile "b": ${rule}`,
    );
  });
});

describe("admission: outcome of the whole manifest", () => {
  it("rejects a manifest without deploymentProfiles", () => {
    const yaml = manifestWith(undefined);
    expect(parseManifest(yaml, "apps/x/app.yaml")).toEqual({
      kind: "rejected",
      path: "apps/x/app.yaml",
      reason: "the manifest declares no deployment profile",
    });
  });

  it("rejects a manifest with an empty deploymentProfiles list", () => {
    expect(rejectionReason([])).toBe("the manifest declares no deployment profile");
  });

  it("rejects deploymentProfiles that is not a list", () => {
    expect(rejectionReason({ id: "p" })).toBe("deploymentProfiles must be a list (got a mapping)");
  });

  it("names the failing rule of each profile when every profile fails", () => {
    const reason = rejectionReason([
      profile("compose-arm", { components: [component("x", { repository: "registry.example/x" })] }),
      profile("h", { type: "docker" }),
    ]);
    expect(reason).toBe(
      'profile "compose-arm": component "x": repository must use oci:// or https://; profile "h": type "docker" is not supported',
    );
  });

  it("drops failing profiles and keeps them as warnings when others pass", () => {
    const yaml = manifestWith([
      profile("broken-first", { type: "docker" }),
      profile("good"),
      profile("broken-last", { requiredResources: { memory: "lots" } }),
    ]);
    const result = parseManifest(yaml, "app.yaml");
    expect(result.kind).toBe("admitted");
    if (result.kind !== "admitted") return;
    expect(result.manifest.profiles.map((p) => p.id)).toEqual(["good"]);
    expect(result.warnings).toEqual([
      'dropped profile "broken-first": type "docker" is not supported',
      'dropped profile "broken-last": requiredResources: memory must match ^[0-9]+(Ki|Mi|Gi)$ (got "lots")',
    ]);
  });
});

describe("admission: a system image (a RAUC bundle)", () => {
  const digest = `sha256:${"9d".repeat(32)}`;
  const image = (properties: Record<string, unknown> = {}) => component("os", { type: "system-image", repository: "https://files.example/os-2.0.0.raucb", digest, ...properties });

  it("keeps type and digest, by https:// URL or OCI reference", () => {
    for (const repository of ["https://files.example/os-2.0.0.raucb", "oci://registry.example/os/gateway"]) {
      const result = parseManifest(manifestWith([profile("p", { components: [component("app"), image({ repository })] })]), "a");
      expect(result.kind, repository).toBe("admitted");
      if (result.kind === "admitted") expect(result.manifest.profiles[0]?.components[1]?.properties).toEqual({ type: "system-image", repository, revision: "1.0.0", digest });
    }
  });

  it.each([
    ["without a digest", { components: [image({ digest: undefined })] }, 'component "os": a system-image needs digest: the RAUC bundle\'s sha256 (sha256:<64 hex>), which the device checks'],
    ["of an unknown type", { components: [component("os", { type: "firmware" })] }, 'component "os": type must be system-image (a RAUC bundle) or absent (a compose or Helm package) (got "firmware")'],
    ["twice in a profile", { components: [{ ...image(), name: "os-0" }, { ...image(), name: "os-1" }] }, 'components "os-0", "os-1": at most one system-image per profile (a device has one root file system)'],
    ["in a helm profile", { type: "helm", components: [image()] }, 'component "os": a system-image belongs in a compose profile (the fleet agent installs it)'],
  ])("fails one %s", (_case, fields, rule) => {
    expect(singleProfileReason(fields)).toBe(`profile "p": ${rule}`);
  });
});
