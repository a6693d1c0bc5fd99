import { describe, expect, it } from "vitest";
import { parseManifest } from "../../../src/modules/applications/manifest/index.js";
import type { ManifestParseResult, NormalizedManifest } from "../../../src/modules/applications/manifest/index.js";
import { MARGO_FORMAT_YAML, OUR_FORMAT_YAML, component, manifestWith, profile } from "./fixtures.js";

function admitted(result: ManifestParseResult): { manifest: NormalizedManifest; warnings: string[] } {
  if (result.kind !== "admitted") throw new Error(`expected admitted, got ${JSON.stringify(result)}`);
  return result;
}

describe("parseManifest: our format", () => {
  it("normalizes the example of manifest.md", () => {
    const result = parseManifest(OUR_FORMAT_YAML, "apps/vision/app.yaml");
    expect(result.kind).toBe("admitted");
    expect(result.path).toBe("apps/vision/app.yaml");
    const { manifest, warnings } = admitted(result);
    expect(warnings).toEqual([]);
    expect(manifest).toEqual({
      apiVersion: "fleet.app/v1alpha1",
      appKey: "vision-gateway",
      name: "Vision Gateway",
      version: "2.4.1",
      description: "Camera ingest and on-device inference",
      category: "vision",
      tags: ["vision", "inference"],
      iconPath: "./icon.png",
      vendor: { name: "Acme Industrial", site: "https://acme.example" },
      profiles: [
        {
          id: "compose-arm",
          type: "compose",
          description: "Docker or Podman hosts",
          components: [
            {
              name: "vision-gateway",
              properties: {
                repository: "oci://registry.example/apps/vision-gateway-compose",
                revision: "2.4.1",
                wait: true,
                timeout: "5m0s",
              },
            },
          ],
          requiredResources: { cpu: { cores: 1.5, architectures: ["arm64", "amd64"] }, memory: "1024Mi", storage: "4Gi" },
        },
      ],
      parameters: {
        // the declared type is read from the default value
        pollSeconds: { value: 30, schema: { type: "integer" }, targets: [{ pointer: "POLL_SECONDS", components: ["vision-gateway"] }] },
      },
    });
  });

  it("keeps numeric-looking text as written (revision 1.10 is not the number 1.1)", () => {
    const yaml = manifestWith([profile("main")])
      .replace("revision: 1.0.0", "revision: 1.10")
      .replace("id: demo-app", "id: 0123");
    const { manifest } = admitted(parseManifest(yaml, "app.yaml"));
    expect(manifest.appKey).toBe("0123");
    expect(manifest.profiles[0]?.components[0]?.properties.revision).toBe("1.10");
  });

  it("leaves parameter values as YAML typed them", () => {
    const yaml = manifestWith([profile("main")], {
      parameters: { replicas: { value: 3, targets: [{ pointer: "REPLICAS", components: ["app"] }] } },
    });
    expect(admitted(parseManifest(yaml, "app.yaml")).manifest.parameters.replicas?.value).toBe(3);
  });

  it("accepts a SemVer with pre-release and build metadata", () => {
    const yaml = manifestWith([profile("main")]).replace("version: 1.0.0", "version: 1.0.0-rc.1+build.7");
    expect(admitted(parseManifest(yaml, "app.yaml")).manifest.version).toBe("1.0.0-rc.1+build.7");
  });

  it("ignores malformed optional catalog fields with a warning instead of failing", () => {
    const yaml = manifestWith([profile("main")]).replace(
      "name: Demo",
      "name: Demo\n  catalog:\n    tags: vision\n    category: [a]",
    );
    const { manifest, warnings } = admitted(parseManifest(yaml, "app.yaml"));
    expect(manifest.tags).toEqual([]);
    expect(manifest.category).toBeUndefined();
    expect(warnings).toEqual([
      "metadata.catalog.tags ignored: it must be a list of strings",
      "metadata.catalog.category ignored: it must be a string",
    ]);
  });
});

describe("parseManifest: Margo format", () => {
  it("reads a Margo ApplicationDescription", () => {
    const { manifest, warnings } = admitted(parseManifest(MARGO_FORMAT_YAML, "margo/margo.yaml"));
    expect(warnings).toEqual([]);
    expect(manifest.apiVersion).toBe("margo.org/v1-alpha1");
    expect(manifest.appKey).toBe("com-northstar-digitron-orchestrator");
    expect(manifest.version).toBe("1.2.1");
    expect(manifest.vendor).toEqual({ name: "Northstar Industrial Applications", site: "http://northstar.example" });
    // Margo keeps icon and tags under catalog.application.
    expect(manifest.iconPath).toBe("./resources/logo.png");
    expect(manifest.tags).toEqual(["optimization", "simulation"]);
    expect(manifest.profiles.map((p) => p.id)).toEqual(["digitron-helm", "digitron-compose"]);
    expect(manifest.profiles[0]?.components.map((c) => c.name)).toEqual(["database-services", "digitron-orchestrator"]);
    expect(manifest.parameters.idpName).toEqual({
      value: "Northstar",
      schema: { type: "string" },
      targets: [{ pointer: "idp.name", components: ["digitron-orchestrator"] }],
    });
  });

  it("reads the Margo type helm.v3 as helm", () => {
    const { manifest } = admitted(parseManifest(MARGO_FORMAT_YAML, "margo.yaml"));
    expect(manifest.profiles[0]?.type).toBe("helm");
  });

  it("accepts helm.v3 and helm in our format too", () => {
    const yaml = manifestWith([profile("a", { type: "helm.v3" }), profile("b", { type: "helm" })]);
    expect(admitted(parseManifest(yaml, "app.yaml")).manifest.profiles.map((p) => p.type)).toEqual(["helm", "helm"]);
  });

  it("does not mix our apiVersion with Margo's kind", () => {
    const yaml = MARGO_FORMAT_YAML.replace("margo.org/v1-alpha1", "fleet.app/v1alpha1");
    expect(parseManifest(yaml, "m.yaml")).toEqual({
      kind: "error",
      path: "m.yaml",
      message: 'kind must be ApplicationManifest for apiVersion fleet.app/v1alpha1 (got "ApplicationDescription")',
    });
  });

  it("drops only the profile a parameter target does not fit", () => {
    // idpName targets digitron-orchestrator, present in both profiles; database-services only in helm.
    const yaml = MARGO_FORMAT_YAML.replace("components: [digitron-orchestrator]", "components: [database-services]");
    const { manifest, warnings } = admitted(parseManifest(yaml, "margo.yaml"));
    expect(manifest.profiles.map((p) => p.id)).toEqual(["digitron-helm"]);
    expect(warnings).toEqual([
      'dropped profile "digitron-compose": parameter "idpName": target component "database-services" is not a component of this profile',
    ]);
  });

  it("keeps component defaults simple: wait and timeout only when written", () => {
    const yaml = manifestWith([profile("main", { components: [component("app")] })]);
    expect(admitted(parseManifest(yaml, "app.yaml")).manifest.profiles[0]?.components[0]?.properties).toEqual({
      repository: "oci://registry.example/app",
      revision: "1.0.0",
    });
  });
});
