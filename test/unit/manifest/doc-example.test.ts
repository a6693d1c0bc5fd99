// docs/manifest.md's complete example says every field the service reads: it must stay a
// manifest the service admits whole (every profile, every parameter, no warning), or the page
// no longer says what the code accepts.
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { parseManifest } from "../../../src/modules/applications/manifest/index.js";
import { ROOT } from "../../support/server-process.js";

const page = fs.readFileSync(path.join(ROOT, "docs/manifest.md"), "utf8");

describe("docs/manifest.md", () => {
  it("its complete example is admitted with every profile, component and parameter and no warning", () => {
    const example = /## A complete example[\s\S]*?```yaml\n([\s\S]*?)```/.exec(page)?.[1];
    expect(example).toBeDefined();
    const result = parseManifest(example!, "apps/vision-gateway/2.4.1/app.yaml");
    if (result.kind !== "admitted") throw new Error(`the example is ${result.kind}: ${JSON.stringify(result)}`);
    expect(result.warnings).toEqual([]);
    const { manifest } = result;
    expect(manifest).toMatchObject({
      apiVersion: "fleet.app/v1alpha1", appKey: "vision-gateway", version: "2.4.1", category: "vision", iconPath: "./icon.png",
      vendor: { name: "Acme Industrial", site: "https://acme.example" },
    });
    expect(manifest.profiles.map((p) => `${p.id} ${p.type} ${p.components.map((c) => c.name).join(",")}`)).toEqual([
      "compose compose vision-gateway,model-store",
      "helm helm vision-gateway",
    ]);
    // every optional component property the page lists is kept
    expect(manifest.profiles[0]!.components.flatMap((c) => Object.keys(c.properties)).sort()).toEqual(
      ["digest", "removeVolumes", "repository", "repository", "revision", "revision", "timeout", "wait"],
    );
    expect(manifest.profiles[0]!.requiredResources).toEqual({ cpu: { cores: 1.5, architectures: ["arm64", "amd64"] }, memory: "1024Mi", storage: "4Gi" });
    expect(Object.keys(manifest.parameters)).toEqual(["pollSeconds", "cloudToken", "logLevel"]);
    expect(manifest.parameters.cloudToken).toMatchObject({ required: true, secret: true, schema: { type: "string", maxLength: 200, pattern: "^tok-" } });
    expect(manifest.parameters.logLevel!.schema).toEqual({ type: "string", enum: ["debug", "info", "warn"] });
  });

  it("the OCI package's media types it names are the ones the OCI sync reads", async () => {
    const { APP_ARTIFACT_TYPES, APP_DESCRIPTION_LAYER } = await import("../../../src/modules/registries/oci/sync.js");
    const section = page.slice(page.indexOf("## In an OCI registry"));
    for (const type of [...APP_ARTIFACT_TYPES, APP_DESCRIPTION_LAYER]) expect(section).toContain(`\`${type}\``);
  });
});
