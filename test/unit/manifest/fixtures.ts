/** Manifests for the tests: literal YAML for the two formats, and a builder for rule variants. */
import { stringify } from "yaml";

/** The example of docs manifest.md, in our format. */
export const OUR_FORMAT_YAML = `
apiVersion: fleet.app/v1alpha1
kind: ApplicationManifest
metadata:
  id: vision-gateway
  name: Vision Gateway
  version: 2.4.1
  description: Camera ingest and on-device inference
  catalog:
    category: vision
    tags: [vision, inference]
    icon: ./icon.png
    organization: [{ name: Acme Industrial, site: https://acme.example }]
deploymentProfiles:
  - id: compose-arm
    type: compose
    description: Docker or Podman hosts
    components:
      - name: vision-gateway
        properties:
          repository: oci://registry.example/apps/vision-gateway-compose
          revision: 2.4.1
          wait: true
          timeout: 5m0s
    requiredResources:
      cpu: { cores: 1.5, architectures: [arm64, amd64] }
      memory: 1024Mi
      storage: 4Gi
parameters:
  pollSeconds:
    value: 30
    targets: [{ pointer: POLL_SECONDS, components: [vision-gateway] }]
`;

/** A Margo ApplicationDescription: helm.v3, icon and tags under catalog.application. */
export const MARGO_FORMAT_YAML = `
apiVersion: margo.org/v1-alpha1
kind: ApplicationDescription
metadata:
  id: com-northstar-digitron-orchestrator
  name: Digitron orchestrator
  description: The Digitron orchestrator
  version: 1.2.1
  catalog:
    application:
      icon: ./resources/logo.png
      tagline: Northstar's latest orchestrator
      tags: [optimization, simulation]
    author:
      - name: Roman Mueller
        email: roman@northstar.example
    organization:
      - name: Northstar Industrial Applications
        site: http://northstar.example
deploymentProfiles:
  - type: helm.v3
    id: digitron-helm
    components:
      - name: database-services
        properties:
          repository: oci://quay.example/charts/realtime-database-services
          revision: 2.3.7
          wait: true
          timeout: 8m30s
      - name: digitron-orchestrator
        properties:
          repository: https://charts.northstar.example/digitron
          revision: 1.0.9
          wait: true
  - type: compose
    id: digitron-compose
    components:
      - name: digitron-orchestrator
        properties:
          repository: https://northstar.example/compose/digitron.tar.gz
          revision: 1.2.1
parameters:
  idpName:
    value: Northstar
    targets:
      - pointer: idp.name
        components: [digitron-orchestrator]
`;

type Plain = Record<string, unknown>;

export function component(name: string, properties: Plain = {}): Plain {
  return {
    name,
    properties: { repository: `oci://registry.example/${name}`, revision: "1.0.0", ...properties },
  };
}

export function profile(id: string, fields: Plain = {}): Plain {
  return { id, type: "compose", components: [component("app")], ...fields };
}

/** A valid manifest in our format with the given deployment profiles (and other top-level fields). */
export function manifestWith(profiles: unknown, topLevel: Plain = {}): string {
  return stringify({
    apiVersion: "fleet.app/v1alpha1",
    kind: "ApplicationManifest",
    metadata: { id: "demo-app", name: "Demo", version: "1.0.0" },
    deploymentProfiles: profiles,
    ...topLevel,
  });
}

/** A manifest whose metadata fields are replaced (undefined removes one). */
export function manifestWithMetadata(metadata: Plain): string {
  const merged: Plain = { id: "demo-app", name: "Demo", version: "1.0.0", ...metadata };
  for (const key of Object.keys(merged)) if (merged[key] === undefined) delete merged[key];
  return stringify({
    apiVersion: "fleet.app/v1alpha1",
    kind: "ApplicationManifest",
    metadata: merged,
    deploymentProfiles: [profile("main")],
  });
}
