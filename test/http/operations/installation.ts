// The installation the backup/restore and move tests carry from one database to another, and
// what they check on the other side (docs/operations.md): devices enrolled over the protocol
// with their certificates, telemetry over three days (three daily partitions), a Git registry
// behind HTTP Basic with its sealed credential, an application synced from it and a deployment
// of it, audit entries, a session (access and refresh token) and the bootstrap API key.
import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { expect } from "vitest";
import { ADMIN_EMAIL, ADMIN_KEY, ADMIN_PASSWORD } from "../../support/harness.js";
import { ROOT, spawnService, type ServerProcess } from "../../support/server-process.js";
import { startGitServer, type GitServer } from "../../support/git-server/index.js";
import { createEnrollmentToken, enroll, ensureCa, type EnrolledDevice } from "../agent/fleet-support.js";
import { appYaml } from "../registries-git/support.js";

export { ADMIN_KEY };

/** What every start of the installation gets (no ENCRYPTION_KEY, JWT_SECRET: DATA_DIR's key files). */
export const ENV = {
  NODE_ENV: "test",
  BOOTSTRAP_API_KEY: ADMIN_KEY,
  BOOTSTRAP_ADMIN_EMAIL: ADMIN_EMAIL,
  BOOTSTRAP_ADMIN_PASSWORD: ADMIN_PASSWORD,
  OUTBOUND_ALLOW_PRIVATE_NETWORKS: "true",
  JOBS_ENABLED: "false",
};

const GIT_AUTH = { username: "deploy", password: "operations-test-secret" };
const DAY = 24 * 3600_000;

export interface Installation {
  git: GitServer;
  devices: EnrolledDevice[];
  registryId: string;
  deploymentId: string;
  session: { accessToken: string; refreshToken: string };
  /** the first snapshot's time; snapshots reach over three days */
  telemetryFrom: number;
}

export function startService(name: string, env: Record<string, string>): Promise<ServerProcess> {
  return spawnService(name, { ...ENV, ...env }, { defaultKey: ADMIN_KEY });
}

/** Runs `npm run <script>` (scripts/<file>) as an operator would; answers its exit code and output. */
export function runScript(file: string, args: string[], env: Record<string, string>): Promise<{ code: number | null; output: string; ms: number }> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", path.join("scripts", file), ...args], {
      cwd: ROOT, env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", ...env }, stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.on("data", (c) => (output += c));
    child.stderr.on("data", (c) => (output += c));
    child.once("error", reject);
    child.once("exit", (code) => resolve({ code, output, ms: Date.now() - started }));
  });
}

export function copyKeys(fromDataDir: string, toDataDir: string) {
  for (const file of ["encryption.key", "jwt.key"]) fs.copyFileSync(path.join(fromDataDir, file), path.join(toDataDir, file));
}

/** Builds the installation through `p`'s API and the device protocol. */
export async function buildInstallation(p: ServerProcess): Promise<Installation> {
  const git = await startGitServer({ auth: GIT_AUTH });
  const repo = await git.createRepo("ops-apps", { "apps/web/app.yaml": appYaml("ops-web", "1.0.0") });
  const registry = await p.api("POST", "/api/v1/registries/git", {
    body: { name: "ops registry", url: repo.url, authType: "BASIC", credential: `${GIT_AUTH.username}:${GIT_AUTH.password}`, syncIntervalMinutes: 0 },
  });
  expect(registry.status, registry.text).toBe(201);
  const synced = await p.api("POST", `/api/v1/registries/git/${registry.body.id}/sync`);
  expect(synced.status, synced.text).toBe(200);
  expect(synced.body).toMatchObject({ success: true, applicationsImported: 1 });

  await ensureCa(p, ADMIN_KEY);
  const token = await createEnrollmentToken(p, ADMIN_KEY, { labels: { ring: "ops" } });
  const devices = [await enroll(p, token.token), await enroll(p, token.token)];
  const telemetryFrom = Math.floor((Date.now() - 2 * DAY) / 60_000) * 60_000;
  for (const device of devices) {
    const hb = await p.api("POST", "/api/v1/agent/heartbeat", { key: null, token: await device.token(), body: {} });
    expect(hb.status, hb.text).toBe(200);
    const snapshots = Array.from({ length: 30 }, (_, i) => ({
      timestamp: new Date(telemetryFrom + i * (DAY / 15)).toISOString(), cpuUsagePercent: i + 0.25, memoryUsedBytes: 1_000_000 + i, memoryTotalBytes: 8_000_000,
    }));
    const sent = await p.api("POST", "/api/v1/agent/telemetry", { key: null, token: await device.token(), body: { snapshots } });
    expect(sent.status, sent.text).toBe(200);
  }

  const app = await p.api("GET", "/api/v1/applications?limit=10");
  expect(app.status, app.text).toBe(200);
  const deployment = await p.api("POST", "/api/v1/deployments", {
    body: { name: "ops web", applicationId: app.body.items[0].id, version: "1.0.0", profileId: "compose", target: { labelSelector: { ring: "ops" } } },
  });
  expect(deployment.status, deployment.text).toBe(201);
  const started = await p.api("POST", `/api/v1/deployments/${deployment.body.id}/start`);
  expect(started.status, started.text).toBe(200);

  const login = await p.api("POST", "/api/v1/auth/login", { key: null, body: { email: ADMIN_EMAIL, password: ADMIN_PASSWORD } });
  expect(login.status, login.text).toBe(200);
  return { git, devices, registryId: registry.body.id, deploymentId: deployment.body.id, session: login.body, telemetryFrom };
}

/** What users and devices see, read through the API (reads only: nothing here is audited). */
export async function observe(p: ServerProcess, inst: Installation) {
  const get = async (url: string) => {
    const res = await p.api("GET", url);
    expect(res.status, `${url}: ${res.text}`).toBe(200);
    return res.body;
  };
  const to = new Date(inst.telemetryFrom + 3 * DAY).toISOString();
  const from = new Date(inst.telemetryFrom).toISOString();
  const devices = await get("/api/v1/devices?limit=100");
  const deployment = await get(`/api/v1/deployments/${inst.deploymentId}`);
  const registry = await get(`/api/v1/registries/git/${inst.registryId}`);
  const audit = await get("/api/v1/audit?limit=200");
  return {
    devices: devices.items.map((d: any) => ({ id: d.id, name: d.name, labels: d.labels })).sort((a: any, b: any) => a.id.localeCompare(b.id)),
    telemetry: await Promise.all(inst.devices.map(async (d) => (await get(`/api/v1/devices/${d.deviceId}/telemetry/raw?metric=cpuUsagePercent&from=${from}&to=${to}&limit=1`)).total)),
    hourly: await Promise.all(inst.devices.map(async (d) => (await get(`/api/v1/devices/${d.deviceId}/telemetry?from=${from}&to=${to}&interval=1h`)).total)),
    deployment: { name: deployment.name, status: deployment.status, rolloutState: deployment.rolloutState },
    registry: { hasCredentials: registry.hasCredentials, lastSyncCommit: registry.lastSyncCommit },
    audit: { total: audit.total, ids: audit.items.map((e: any) => e.id) },
  };
}

/** Everything the installation relied on works on `p`, which `before` described on the original. */
export async function expectSameInstallation(p: ServerProcess, inst: Installation, before: Awaited<ReturnType<typeof observe>>) {
  const after = await observe(p, inst);
  expect(after).toEqual(before);
  expect(before.telemetry).toEqual([30, 30]);
  expect(before.audit.total).toBeGreaterThan(5);

  // The devices heartbeat with the certificates they were given, and are told their deployment.
  for (const device of inst.devices) {
    const hb = await p.api("POST", "/api/v1/agent/heartbeat", { key: null, token: await device.token(), body: {} });
    expect(hb.status, hb.text).toBe(200);
    expect(hb.body.deployments.map((d: { deploymentId: string }) => d.deploymentId)).toContain(inst.deploymentId);
  }
  // The registry syncs: its sealed credential opens and the Git server accepts it.
  const { commit } = await inst.git.commit("ops-apps", { "apps/web/app.yaml": appYaml("ops-web", "1.1.0") });
  const synced = await p.api("POST", `/api/v1/registries/git/${inst.registryId}/sync`);
  expect(synced.status, synced.text).toBe(200);
  expect(synced.body).toMatchObject({ success: true, commit, applicationsFound: 1 });
  const versions = await p.api("GET", "/api/v1/applications?limit=10");
  expect(versions.body.items.map((a: { latestVersion: string }) => a.latestVersion)).toEqual(["1.1.0"]);
  // The CA's sealed private key signs: a new device enrolls.
  const token = await createEnrollmentToken(p, ADMIN_KEY);
  await enroll(p, token.token);
  // The session: its access token (signed with jwt.key) and its refresh token.
  const profile = await p.api("GET", "/api/v1/profile", { key: null, token: inst.session.accessToken });
  expect(profile.status, profile.text).toBe(200);
  expect(profile.body.email).toBe(ADMIN_EMAIL);
  const refreshed = await p.api("POST", "/api/v1/auth/refresh", { key: null, body: { refreshToken: inst.session.refreshToken } });
  expect(refreshed.status, refreshed.text).toBe(200);
}
