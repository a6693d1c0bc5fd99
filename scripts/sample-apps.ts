// The project's sample applications (four applications, five manifests: one in the Margo
// format, vision-gateway in two versions) and how they are served: a bare Git repository over
// smart HTTP on loopback (`git http-backend`, test/support/git-server), which the service adds
// as a Git registry. `npm run demo` (scripts/demo.ts) and `npm run samples` (scripts/samples.ts)
// both use it: one way to serve them, one way to add them.
import { startGitServer, type GitServer } from "../test/support/git-server/index.js";

// Per /work/shared/design/manifest.md (one our format, one Margo).

const manifest = (id: string, name: string, version: string, extra: { description: string; category: string; tags: string[]; type?: string; vendor: string; cores?: number }) => `apiVersion: fleet.app/v1alpha1
kind: ApplicationManifest
metadata:
  id: ${id}
  name: ${name}
  version: ${version}
  description: ${extra.description}
  catalog:
    category: ${extra.category}
    tags: [${extra.tags.join(", ")}]
    icon: ./icon.svg
    organization: [{ name: ${extra.vendor}, site: https://example.com }]
deploymentProfiles:
  - id: ${extra.type ?? "compose"}-default
    type: ${extra.type ?? "compose"}
    components:
      - name: ${id}
        properties:
          repository: oci://registry.example/apps/${id}
          revision: ${version}
          timeout: 5m0s
    requiredResources:
      cpu: { cores: ${extra.cores ?? 0.5}, architectures: [arm64, amd64] }
      memory: 512Mi
      storage: 1Gi
${id === "vision-gateway" ? VISION_PARAMETERS : ""}`;

// Parameters a deployment of the vision gateway gives (docs/deployments.md): a checked number
// with a default, and a secret without one.
const VISION_PARAMETERS = `parameters:
  pollSeconds:
    value: 30
    description: how often the cameras are polled
    schema: { type: integer, minimum: 5, maximum: 3600 }
    targets: [{ pointer: POLL_SECONDS, components: [vision-gateway] }]
  cloudToken:
    description: token for the inference cloud
    secret: true
    required: true
    schema: { type: string }
    targets: [{ pointer: CLOUD_TOKEN, components: [vision-gateway] }]
`;

const ICON = `<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16"><rect width="16" height="16" fill="#2a7"/></svg>\n`;

const MARGO = `apiVersion: margo.org/v1-alpha1
kind: ApplicationDescription
metadata:
  id: plc-connector
  name: PLC Connector
  version: 1.0.0
  description: OPC UA and Modbus bridge to MQTT
  catalog:
    application:
      descriptionFile: ./README.md
      tagline: Field bus to MQTT
      tags: [industrial, opcua, modbus]
    author: [{ name: Demo Vendor }]
    organization: [{ name: Demo Vendor, site: https://example.com }]
deploymentProfiles:
  - type: helm.v3
    id: helm
    components:
      - name: plc-connector
        properties:
          repository: oci://registry.example/charts/plc-connector
          revision: 1.0.0
`;

export const SAMPLE_APP_FILES: Record<string, string> = {
  "README.md": "Sample applications of the fleet-manager demo.\n",
  "apps/vision-gateway/2.4.0/app.yaml": manifest("vision-gateway", "Vision Gateway", "2.4.0", { description: "Camera ingest and on-device inference", category: "vision", tags: ["vision", "inference"], vendor: "Acme Industrial", cores: 1.5 }),
  "apps/vision-gateway/2.4.0/icon.svg": ICON,
  "apps/vision-gateway/2.4.1/app.yaml": manifest("vision-gateway", "Vision Gateway", "2.4.1", { description: "Camera ingest and on-device inference", category: "vision", tags: ["vision", "inference"], vendor: "Acme Industrial", cores: 1.5 }),
  "apps/vision-gateway/2.4.1/icon.svg": ICON,
  "apps/mqtt-broker/app.yaml": manifest("mqtt-broker", "MQTT Broker", "5.0.2", { description: "Local MQTT broker for sensors", category: "messaging", tags: ["mqtt", "messaging"], vendor: "Demo Vendor", type: "helm" }),
  "apps/mqtt-broker/icon.svg": ICON,
  "apps/telemetry-forwarder/app.yaml": manifest("telemetry-forwarder", "Telemetry Forwarder", "0.9.0", { description: "Batches and forwards sensor data", category: "monitoring", tags: ["telemetry"], vendor: "Demo Vendor" }),
  "apps/telemetry-forwarder/icon.svg": ICON,
  "apps/plc-connector/margo.yaml": MARGO,
  "apps/plc-connector/README.md": "# PLC Connector\n\nBridges OPC UA and Modbus devices to MQTT.\n",
};

/** The repository's name: its clone URL is <server>/demo-apps.git. */
export const SAMPLE_REPOSITORY = "demo-apps";

export interface SampleAppsServer {
  /** the clone URL to add as a Git registry (branch main, path /apps) */
  url: string;
  commit: string;
  close(): Promise<void>;
}

/**
 * Serves the sample applications as a Git repository on 127.0.0.1 (`port`, default any free
 * one). Needs the git command-line tool; its error says so.
 */
export async function serveSampleApps(options: { port?: number } = {}): Promise<SampleAppsServer> {
  let git: GitServer;
  try {
    git = await startGitServer({ port: options.port });
  } catch (err) {
    throw new Error(`could not serve a Git repository (${(err as Error).message.split("\n")[0]}); is git installed?`);
  }
  try {
    const repo = await git.createRepo(SAMPLE_REPOSITORY, SAMPLE_APP_FILES);
    return { url: repo.url, commit: repo.commit, close: () => git.close() };
  } catch (err) {
    await git.close().catch(() => undefined);
    throw err;
  }
}

/** A REST call with a key or a bearer token; a non-2xx answer throws with its status and body. */
export type ApiCall = (method: string, path: string, opts?: { key?: string; token?: string; body?: unknown }) => Promise<any>;

export function apiCaller(base: string): ApiCall {
  return async (method, p, opts = {}) => {
    const headers: Record<string, string> = {};
    if (opts.key) headers["x-api-key"] = opts.key;
    if (opts.token) headers.authorization = `Bearer ${opts.token}`;
    if (opts.body !== undefined || method !== "GET") headers["content-type"] = "application/json";
    const res = await fetch(base + p, { method, headers, body: method === "GET" ? undefined : JSON.stringify(opts.body ?? {}) });
    const text = await res.text();
    const body = text ? JSON.parse(text) : undefined;
    if (!res.ok) throw new Error(`${method} ${p}: ${res.status} ${text.slice(0, 300)}`);
    return body;
  };
}

export interface SampleRegistry {
  registry: { id: string; name: string };
  synced: { commit?: string; applicationsFound: number; applicationsImported: number; errors: unknown[]; rejectedManifests: unknown[] };
}

/** Adds the served repository as a Git registry of the key's organization and syncs it once. */
export async function addSampleRegistry(call: ApiCall, key: string, url: string, name = "sample apps"): Promise<SampleRegistry> {
  const registry = await call("POST", "/api/v1/registries/git", { key, body: { name, url, branch: "main", path: "/apps", syncIntervalMinutes: 5 } });
  const synced = await call("POST", `/api/v1/registries/git/${registry.id}/sync`, { key });
  return { registry, synced };
}

/** "synced at 227f1e5: 5 manifests, 5 imported, 0 errors, 0 rejected" */
export function syncSummary(synced: SampleRegistry["synced"]): string {
  return `synced at ${synced.commit?.slice(0, 7)}: ${synced.applicationsFound} manifests, ${synced.applicationsImported} imported, ${synced.errors.length} errors, ${synced.rejectedManifests.length} rejected`;
}
