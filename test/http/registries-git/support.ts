// Helpers for the Git registry and catalog tests: manifests, icons, and registries pointing at
// the real Git server of test/support/git-server.
import { stringify } from "yaml";
import { expect } from "vitest";
import type { ApiResponse, Harness, Tenant } from "../../support/harness.js";

export { MARGO_FORMAT_YAML, OUR_FORMAT_YAML } from "../../unit/manifest/fixtures.js";

/** A PNG signature plus a little payload: what the icon sniffing looks at. */
export const PNG = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.from("IHDR-test-image")]);
export const SVG = `<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg" width="8" height="8"><rect width="8" height="8"/></svg>\n`;

export interface AppOptions {
  name?: string;
  description?: string;
  category?: string;
  tags?: string[];
  icon?: string;
  vendor?: { name: string; site?: string };
  profiles?: unknown[];
  parameters?: Record<string, unknown>;
}

export function component(name: string, properties: Record<string, unknown> = {}) {
  return { name, properties: { repository: `oci://registry.example/${name}`, revision: "1.0.0", ...properties } };
}

export function composeProfile(id = "compose", extra: Record<string, unknown> = {}) {
  return { id, type: "compose", components: [component("app")], ...extra };
}

/** A manifest in our format. */
export function appYaml(id: string, version: string, options: AppOptions = {}): string {
  const catalog: Record<string, unknown> = {};
  if (options.category) catalog.category = options.category;
  if (options.tags) catalog.tags = options.tags;
  if (options.icon) catalog.icon = options.icon;
  if (options.vendor) catalog.organization = [options.vendor];
  return stringify({
    apiVersion: "fleet.app/v1alpha1",
    kind: "ApplicationManifest",
    metadata: {
      id,
      name: options.name ?? id,
      version,
      ...(options.description ? { description: options.description } : {}),
      ...(Object.keys(catalog).length ? { catalog } : {}),
    },
    deploymentProfiles: options.profiles ?? [composeProfile()],
    ...(options.parameters ? { parameters: options.parameters } : {}),
  });
}

export const REGISTRY_FIELDS = [
  "id", "organizationId", "name", "url", "branch", "path", "authType", "hasCredentials",
  "syncIntervalMinutes", "enabled", "managedBy", "managedCommit", "createdAt", "updatedAt",
];
export const SYNCED_FIELDS = [...REGISTRY_FIELDS, "lastSyncAt", "lastSyncCommit"];
export const SYNC_RESULT_FIELDS = [
  "success", "registryId", "scope", "applicationsFound", "applicationsImported", "applicationsUpdated",
  "errors", "rejectedManifests", "syncDuration", "commit",
];

let counter = 0;

/** Creates a Git registry in the tenant (201 asserted) and returns its body. */
export async function createRegistry(h: Harness, tenant: Tenant | null, body: Record<string, unknown>) {
  counter += 1;
  const res = await h.api("POST", "/api/v1/registries/git", { key: tenant?.key, body: { name: `registry-${counter}`, ...body } });
  expect(res.status, res.text).toBe(201);
  return res.body;
}

export async function sync(h: Harness, tenant: Tenant | null, registryId: string): Promise<ApiResponse> {
  return h.api("POST", `/api/v1/registries/git/${registryId}/sync`, { key: tenant?.key });
}

/** Syncs and expects a completed sync (200, success: true). */
export async function syncOk(h: Harness, tenant: Tenant | null, registryId: string) {
  const res = await sync(h, tenant, registryId);
  expect(res.status, res.text).toBe(200);
  expect(res.body.success, res.text).toBe(true);
  return res.body;
}
