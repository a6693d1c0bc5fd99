// Shared by the deployment browser tests: an application imported the way operators import
// one (a Git registry served over smart HTTP on loopback, synced through the API), and the
// agent's side of a heartbeat spoken by the test for simulated devices, so that each test
// decides which device reports what and when (the page and the API then read the same state).
import { expect } from "vitest";
import { startGitServer, type GitServer } from "../../support/git-server/index.js";
import type { ConsoleService, SimulatedFleet } from "../../support/console-service.js";
import type { VirtualDevice } from "../../../src/simulator/virtual-device.js";

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
