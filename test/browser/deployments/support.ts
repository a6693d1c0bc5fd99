// Shared by the deployment browser tests: applications imported the way operators import
// them (a Git registry served over smart HTTP on loopback, created and synced through the
// public API of the service the browser drives), and the agent's side of a heartbeat spoken by
// the test for simulated devices, so that each test decides which device reports what and
// when (the page and the API then read the same state).
import { expect } from "vitest";
import { startGitServer, type GitServer } from "../../support/git-server/index.js";
import type { ConsoleService, SimulatedFleet } from "../../support/console-service.js";
import type { VirtualDevice } from "../../../src/simulator/virtual-device.js";
import { appYaml, component, type AppOptions } from "../../http/registries-git/support.js";

export const APP_KEY = "line-monitor";
export const APP_NAME = "Line Monitor";

/** A manifest for every architecture (the simulated fleet mixes arm64, amd64 and armv7). */
function manifest(version: string): string {
  return `apiVersion: fleet.app/v1alpha1
kind: ApplicationManifest
metadata:
  id: ${APP_KEY}
  name: ${APP_NAME}
  version: ${version}
  description: Watches the production line
deploymentProfiles:
  - id: compose-main
    type: compose
    components:
      - name: monitor
        properties:
          repository: oci://registry.example/apps/${APP_KEY}
          revision: ${version}
`;
}

/** Serves `versions` of the application from a Git repository and syncs a registry of it; answers the application's id. */
export async function importApplication(service: ConsoleService, versions: string[]): Promise<{ applicationId: string; git: GitServer }> {
  const git = await startGitServer();
  const files = Object.fromEntries(versions.map((v) => [`apps/${APP_KEY}/${v}/app.yaml`, manifest(v)]));
  const repo = await git.createRepo("apps", files);
  const registry = await service.call<{ id: string }>("POST", "/api/v1/registries/git", { body: { name: "line apps", url: repo.url, branch: "main", path: "/apps" } });
  const synced = await service.call<{ applicationsImported: number; rejectedManifests: unknown[] }>("POST", `/api/v1/registries/git/${registry.id}/sync`);
  expect(synced.rejectedManifests).toEqual([]);
  const apps = await service.call<{ items: { id: string; key: string }[] }>("GET", "/api/v1/applications?limit=100");
  const app = apps.items.find((a) => a.key === APP_KEY);
  if (!app) throw new Error(`${APP_KEY} was not imported: ${JSON.stringify(synced)}`);
  return { applicationId: app.id, git };
}

export interface DesiredEntry {
  deploymentId: string;
  action: "install" | "remove";
  version: string;
}

/**
 * One heartbeat of `device` over the agent protocol (its own signed token) carrying
 * `reports`; answers the desired state. The device's own DeploymentAgent is bypassed: the
 * test says what it reports.
 */
export async function heartbeat(fleet: SimulatedFleet, device: VirtualDevice, reports: Array<{ deploymentId: string; state: string; message?: string }> = []): Promise<DesiredEntry[]> {
  const res = await fleet.simulator.client.request<{ deployments: DesiredEntry[] }>(
    "POST",
    "/api/v1/agent/heartbeat",
    { status: "online", ...(reports.length ? { deployments: reports } : {}) },
    { authorization: await device.authorization() },
  );
  if (res.status !== 200) throw new Error(`heartbeat of ${device.reportedDeviceId}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.deployments;
}

/** Every device of `fleet` reports `state` for `deploymentId` (one heartbeat each, in order). */
export async function reportAll(fleet: SimulatedFleet, devices: VirtualDevice[], deploymentId: string, state: string, message?: string): Promise<void> {
  for (const device of devices) await heartbeat(fleet, device, [{ deploymentId, state, ...(message ? { message } : {}) }]);
}

/** The devices of `fleet` by their service id. */
export function byId(fleet: SimulatedFleet): Map<string, VirtualDevice> {
  return new Map(fleet.devices.map((d) => [d.deviceId!, d]));
}

/** The simulated devices of batch `batch` (0: the canary) of deployment `id`. */
export async function devicesOfBatch(service: ConsoleService, fleet: SimulatedFleet, id: string, batch: number): Promise<VirtualDevice[]> {
  const page = await service.call<{ items: { deviceId: string }[] }>("GET", `/api/v1/deployments/${id}/devices?batch=${batch}&limit=100`);
  const devices = byId(fleet);
  return page.items.map((e) => devices.get(e.deviceId)!);
}

export { component };

export interface ImportedCatalog {
  git: GitServer;
  /** application ids by manifest id */
  apps: Record<string, string>;
}

/** Publishes `manifests` (manifest id -> options, version 1.0.0) in a Git repository and syncs a registry of it. */
export async function importApplications(service: ConsoleService, manifests: Record<string, AppOptions & { version?: string }>): Promise<ImportedCatalog> {
  const git = await startGitServer();
  const files = Object.fromEntries(Object.entries(manifests).map(([id, options]) => [`apps/${id}/app.yaml`, appYaml(id, options.version ?? "1.0.0", options)]));
  const { url } = await git.createRepo("catalog", files);
  const registry = await service.call<{ id: string }>("POST", "/api/v1/registries/git", { body: { name: "catalog", url } });
  const result = await service.call<{ success: boolean; applicationsImported: number; rejectedManifests: unknown[] }>("POST", `/api/v1/registries/git/${registry.id}/sync`);
  if (!result.success || result.applicationsImported !== Object.keys(manifests).length) throw new Error(`sync: ${JSON.stringify(result)}`);
  const list = await service.call<{ items: { id: string; key: string }[] }>("GET", "/api/v1/applications?limit=100");
  return { git, apps: Object.fromEntries(list.items.map((a) => [a.key, a.id])) };
}
