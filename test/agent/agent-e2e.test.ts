// The fleet agent end to end, as an operator runs it (test/support/agent-lab.ts): the service
// as `npm start` runs it, a real `fleet-agent` process enrolled with an enrollment token, real
// Podman (runc) running what a Git registry's application deploys, the images and compose
// packages in a local OCI registry (Debian's docker-registry). Everything on loopback.
//
//   version 1 runs and its page shows the deployment's parameter; version 2 replaces it;
//   version 3's container exits: reported failed, version 2 keeps serving (device-side
//   rollback) and the service shows it running again; a rollback through the API; a service
//   outage loses no telemetry; kill -9 of the agent during an install converges after a restart
//   with one project; an upgrade in place (PATCH of the running deployment) to version 3 rolls
//   back on the device too, also with kill -9 of the agent between the new revision's download
//   and its start; removal, with kill -9
//   of the agent as it begins, leaves no container; a revoked certificate stops the agent; the telemetry agrees with /proc; the
//   package route refuses a device the deployment does not target; an image of a private
//   registry (htpasswd) is pulled through the service's registry proxy with a short-lived pull
//   grant, which nothing but its device, deployment and repositories can use; and one pinned by
//   digest, pulled through the service by that digest.
//
// It runs in both database phases (vitest.config.ts): the service on this phase's database.
import { createHash } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { JsonClient } from "../../agent/src/core/json-client.js";
import { DeviceSession } from "../../agent/src/core/session.js";
import { LAB_ADMIN, LAB_JWT_SECRET, LAB_PRIVATE_DIGEST_VERSION, LAB_PRIVATE_VERSION, startAgentLab, type AgentLab } from "../support/agent-lab.js";
import { loadIdentity, loadKey } from "../../agent/src/identity-store.js";
import { StateDir } from "../../agent/src/state-dir.js";
import { pullGrantKey, signPullGrant } from "../../src/modules/agent/pull-grant.js";
import { launchBrowser, SCREENSHOT_DIR, UI_TIMEOUT_MS } from "../support/browser.js";
import { peerAvailable } from "../support/peers.js";
import { eventually } from "../support/server-process.js";

const available = peerAvailable("podman") && peerAvailable("docker-registry");
// the private registry's BASIC authentication (apache2-utils)
const withPrivateRegistry = peerAvailable("htpasswd");
const MANIFEST_TYPES = "application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json";

interface PullGrant { username: string; token: string; expiresAt: string; repositories: Array<{ repository: string; proxy: string }> }

/** Every file under a directory. */
function filesUnder(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true, recursive: true }).filter((e) => e.isFile()).map((e) => path.join(e.parentPath, e.name));
}

/** The registry proxy of the service at `base`, as an engine asks it: GET (or HEAD) with the grant as Basic password. */
function proxyFetch(base: string, p: string, token?: string, method = "GET") {
  const authorization = token ? `Basic ${Buffer.from(`fleet-pull-grant:${token}`).toString("base64")}` : undefined;
  return fetch(`${base}/v2/${p}`, { method, headers: { accept: MANIFEST_TYPES, ...(authorization ? { authorization } : {}) } });
}

// Each step waits for real containers on a shared 2-core machine: minutes, not seconds.
describe.skipIf(!available)("fleet-agent on Podman against the service", { timeout: 240_000 }, () => {
  let lab: AgentLab;
  const deploymentIds: Record<string, string> = {};
  /** the lab device's pull grant for the private version (refused once its certificate is revoked) */
  let grantOfDevice: PullGrant | null = null;
  /** a device of the organization that no deployment targets (enrolled by the pull grant's test) */
  let bystanderId = "";
  const deploy = async (version: string, parameters: Record<string, unknown> = {}) => (deploymentIds[version] = await lab.deploy(version, parameters));

  /** The device's entries of the application, as its Deployments tab lists them: [deployment, version, state]. */
  const entriesOfDevice = async () => {
    const page = await lab.call<{ items: Array<{ deploymentId: string; applicationId: string; version: string; state: string }> }>("GET", `/api/v1/devices/${lab.deviceId}/deployments?limit=100`);
    return page.items.filter((x) => x.applicationId === lab.applicationId).map((x) => [x.deploymentId, x.version, x.state]);
  };
  /** The predecessor holding an earlier revision of a deployment upgraded in place (upgradedToId), by its version. */
  const predecessorOf = async (id: string, version: string) => {
    const page = await lab.call<{ items: Array<{ id: string; version: string; upgradedToId: string | null }> }>("GET", "/api/v1/deployments?limit=100");
    return page.items.find((d) => d.upgradedToId === id && d.version === version);
  };

  /** A component's package as the lab's device asks for it, as the agent does (its key and certificate from the state directory). */
  const packageAsDevice = async (deploymentId: string) => {
    const state = new StateDir(lab.stateDir);
    const identity = loadIdentity(state);
    const device = new DeviceSession(new JsonClient(lab.service.url));
    device.keys = await loadKey(state, identity.keyFile);
    device.adoptCertificate(identity.deviceId, state.readText(identity.certificateFile)!, identity.certificateNotAfter);
    try {
      return await device.componentPackage(deploymentId, "web");
    } finally {
      device.close();
    }
  };

  // what the agent printed, when a step fails: the first thing to read
  beforeEach(({ onTestFailed }) => onTestFailed(() => console.error(`fleet-agent printed:\n${lab?.agentOutput.slice(-60).join("\n")}`)));

  beforeAll(async () => {
    lab = await startAgentLab({ agentEnv: { FLEET_AGENT_TELEMETRY_SECONDS: "2", FLEET_AGENT_LOG_SECONDS: "2" }, privateRegistry: withPrivateRegistry, database: "migrated" });
  }, 300_000);
  afterAll(async () => {
    await lab?.close();
  }, 120_000);

  it("enrolls with an enrollment token: the key stays on the device (0600), the certificate and chain beside it", async () => {
    const stdout = await lab.enroll(["--name", "lab-gateway", "--label", "rack=r1", "--device-id", "e2e-machine-1"], { labels: { site: "lab" } });
    expect(stdout).toMatch(/^enrolled as device [0-9a-f-]{36}/);
    const identity = JSON.parse(fs.readFileSync(path.join(lab.stateDir, "identity.json"), "utf8"));
    const keyFile = path.join(lab.stateDir, identity.keyFile);
    expect(fs.statSync(keyFile).mode & 0o777).toBe(0o600);
    expect(fs.readFileSync(keyFile, "utf8")).toMatch(/^-----BEGIN PRIVATE KEY-----/);
    expect(fs.readFileSync(path.join(lab.stateDir, identity.certificateFile), "utf8")).toMatch(/^-----BEGIN CERTIFICATE-----/);
    expect(fs.readFileSync(path.join(lab.stateDir, identity.chainFile), "utf8")).toMatch(/^-----BEGIN CERTIFICATE-----/);
    const device = await lab.call("GET", `/api/v1/devices/${lab.deviceId}`);
    expect(device).toMatchObject({ name: "lab-gateway", reportedDeviceId: "e2e-machine-1", labels: { site: "lab", rack: "r1" }, agentVersion: "0.1.0" });
    expect(device.arch).toBe(os.arch() === "x64" ? "amd64" : os.arch());
    // the private key was never sent: nothing the service stored holds it
    expect(JSON.stringify(device)).not.toContain(fs.readFileSync(keyFile, "utf8").split("\n")[1]);
  });

  it("runs version 1: the page answers with the deployment's parameter; facts, telemetry and logs come from the machine", async () => {
    lab.startAgent();
    const id = await deploy("1.0.0", { greeting: "bonjour" });
    await lab.waitForState(id, "running");
    expect(await lab.page()).toBe("version 1.0.0 says bonjour");
    const device = await lab.call("GET", `/api/v1/devices/${lab.deviceId}`);
    expect(device.status).toBe("online");
    expect(device.os).toBe(/PRETTY_NAME="?([^"\n]+)"?/.exec(fs.readFileSync("/etc/os-release", "utf8"))![1]);
    // the machine's own address (the agent reports it with every heartbeat), not the loopback the request came from
    expect(device.ipAddress).not.toBe("127.0.0.1");
    expect(String(device.facts.addresses).split(",")).toContain(device.ipAddress);

    // Telemetry: memoryTotalBytes is MemTotal of /proc/meminfo; uptime within 30 s (the snapshot's age and the request).
    const latest = await eventually(async () => {
      const res = await lab.api("GET", `/api/v1/devices/${lab.deviceId}/telemetry/latest`);
      return res.status === 200 && res.body?.containersRunning === 1 ? res.body : undefined;
    }, 60_000, "a telemetry snapshot with the running container");
    const memTotal = Number(/MemTotal:\s+(\d+) kB/.exec(fs.readFileSync("/proc/meminfo", "utf8"))![1]) * 1024;
    expect(latest.memoryTotalBytes).toBe(memTotal);
    const uptime = Number(fs.readFileSync("/proc/uptime", "utf8").split(" ")[0]);
    expect(Math.abs(latest.uptimeSeconds - uptime)).toBeLessThan(30);
    expect(latest.containersFailed).toBe(0);

    // The container's own log lines reach the service, and so do the agent's own.
    await eventually(async () => {
      const logs = await lab.api("GET", `/api/v1/devices/${lab.deviceId}/logs?limit=100`);
      return logs.body?.items?.some((l: { message: string }) => l.message.includes("serving version 1.0.0")) || undefined;
    }, 60_000, "the container's log line at the service");
    await eventually(async () => {
      const logs = await lab.api("GET", `/api/v1/devices/${lab.deviceId}/logs?limit=200`);
      return logs.body?.items?.some((l: { message: string; source?: string }) => l.source === "fleet-agent" && /runs as device .* on podman/.test(l.message)) || undefined;
    }, 60_000, "the agent's own log line at the service");
  });

  // a browser test: once, in the PGlite phase (vitest.config.ts)
  it.skipIf(!peerAvailable("chromium") || process.env.TEST_SCOPE === "database")("the console shows the real device with the machine's facts and telemetry (screenshot)", async () => {
    const browser = await launchBrowser();
    try {
      const base = lab.service.url;
      const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, colorScheme: "light", locale: "en-US", baseURL: base });
      const signIn = await context.request.post(`${base}/api/v1/auth/session`, { data: { email: LAB_ADMIN.email, password: LAB_ADMIN.password }, headers: { origin: base } });
      expect(signIn.status()).toBe(200);
      const page = await context.newPage();
      await page.goto(`/devices/${lab.deviceId}?tab=telemetry`);
      await page.getByRole("heading", { level: 1, name: "lab-gateway" }).waitFor({ timeout: UI_TIMEOUT_MS });
      // the machine's own operating system, as the agent read it from os-release
      const osName = /PRETTY_NAME="?([^"\n]+)"?/.exec(fs.readFileSync("/etc/os-release", "utf8"))![1];
      await page.getByText(osName).first().waitFor({ timeout: UI_TIMEOUT_MS });
      await page.getByRole("figure", { name: "CPU, memory and disk use over the chosen range" }).locator("canvas").first().waitFor({ timeout: UI_TIMEOUT_MS });
      fs.mkdirSync(SCREENSHOT_DIR, { recursive: true });
      await page.screenshot({ path: path.join(SCREENSHOT_DIR, "agent-real-device.png"), animations: "disabled", caret: "hide" });
    } finally {
      await browser.close();
    }
  });

  it("the package route answers only a device the deployment targets", async () => {
    const route = `/api/v1/agent/deployments/${deploymentIds["1.0.0"]}/components/web`;
    // The admin's API key is no device credential.
    expect((await lab.api("GET", route)).status).toBe(401);
    // Another device of the same organization, enrolled over the protocol, is not targeted: 404.
    const token = await lab.call<{ token: string }>("POST", "/api/v1/enrollment-tokens", { name: "bystander" });
    const bystander = new DeviceSession(new JsonClient(lab.service.url));
    expect((await bystander.enrollWith({ enrollmentToken: token.token, reportedDeviceId: "bystander-1" })).status).toBe(200);
    const refused = await bystander.call<{ message: string }>("GET", route);
    expect(refused.status).toBe(404);
    expect(JSON.stringify(refused.body)).not.toContain("services:");
    bystander.close();
  });

  it("a service outage: the workloads keep running, and the telemetry and log lines taken meanwhile arrive afterwards", async () => {
    const outageStart = new Date();
    await lab.proxy.down();
    await eventually(async () => (lab.agentOutput.some((l) => l.includes("cannot be reached")) ? true : undefined), 30_000, "the agent noticing the outage");
    // two or more snapshots are taken while the service is away (one every 2 s)
    await new Promise((resolve) => setTimeout(resolve, 6000));
    expect(await lab.page()).toBe("version 1.0.0 says bonjour");
    const outageEnd = new Date();
    await lab.proxy.up();
    await eventually(async () => {
      const res = await lab.api("GET", `/api/v1/devices/${lab.deviceId}/telemetry/raw?metric=memoryUsedBytes&from=${outageStart.toISOString()}&to=${outageEnd.toISOString()}`);
      const points = (res.body?.items ?? []) as unknown[];
      return res.status === 200 && points.length >= 2 ? points : undefined;
    }, 60_000, "the snapshots of the outage at the service");
    await eventually(async () => (lab.agentOutput.some((l) => l.includes("answers again")) ? true : undefined), 30_000, "the agent noticing the service is back");
    // and the log line the agent wrote while the service was away (its on-disk log outbox kept it)
    await eventually(async () => {
      const logs = await lab.api("GET", `/api/v1/devices/${lab.deviceId}/logs?limit=200`);
      return logs.body?.items?.some((l: { message: string; source?: string }) => l.source === "fleet-agent" && l.message.startsWith("the service cannot be reached")) || undefined;
    }, 60_000, "the log line written during the outage at the service");
  });

  it("version 2 replaces version 1 under the same project", async () => {
    const id = await deploy("2.0.0");
    await lab.waitForState(id, "running");
    expect(await lab.page()).toBe("version 2.0.0 says hello");
    expect(await lab.projectContainers()).toHaveLength(1);
  });

  it("version 3 exits: reported failed with the engine's words, and version 2 keeps serving", async () => {
    const id = await deploy("3.0.0");
    const failed = await lab.waitForState(id, "failed");
    expect(failed.message).toMatch(/exited with code 3/);
    expect(failed.message).toMatch(/2\.0\.0 runs again/);
    expect(await lab.page()).toBe("version 2.0.0 says hello");
    // the service shows the version 2 deployment running on the device again (it had been superseded)
    expect(await entriesOfDevice()).toEqual(expect.arrayContaining([[id, "3.0.0", "failed"], [deploymentIds["2.0.0"], "2.0.0", "running"]]));
  });

  it("a rollback through the API: the device runs the version before the failed one again, as a deployment of its own", async () => {
    // version 3 failed on the device (2.0.0 kept running there): the service's target is 2.0.0
    const target = await lab.call("GET", `/api/v1/devices/${lab.deviceId}/rollback-target?applicationId=${lab.applicationId}`);
    expect(target, JSON.stringify(target)).toMatchObject({ targetVersion: "2.0.0", available: true });
    const res = await lab.api("POST", `/api/v1/devices/${lab.deviceId}/rollback`, { body: { applicationId: lab.applicationId } });
    expect(res.status, res.text).toBeLessThan(300);
    const rollbackId = res.body.deploymentId ?? res.body.id;
    await lab.waitForState(rollbackId, "running");
    expect(await lab.page()).toBe("version 2.0.0 says hello");
    expect(await lab.projectContainers()).toHaveLength(1);
  });

  it("kill -9 during an install: after a restart the agent converges, one project, the report not lost", async () => {
    const id = await deploy("2.0.0", { greeting: "after the crash" });
    await eventually(async () => {
      const s = await lab.deviceState(id);
      return s && (s.state === "downloading" || s.state === "installing") ? s : undefined;
    }, 60_000, "the install under way");
    await lab.stopAgent("SIGKILL");
    lab.startAgent();
    await lab.waitForState(id, "running");
    expect(await lab.page()).toBe("version 2.0.0 says after the crash");
    expect(await lab.projectContainers()).toHaveLength(1);
  });

  it("an upgrade in place to version 3 (PATCH of the running deployment): reported failed, and version 2 of that deployment keeps serving, shown running", async () => {
    const id = deploymentIds["2.0.0"];
    const patched = await lab.api("PATCH", `/api/v1/deployments/${id}`, { body: { version: "3.0.0" } });
    expect(patched.status, patched.text).toBe(200);
    const failed = await lab.waitForState(id, "failed");
    expect(failed.message).toMatch(/exited with code 3/);
    expect(failed.message).toMatch(/rolled back on the device: .* 2\.0\.0 runs again/);
    expect(await lab.page()).toBe("version 2.0.0 says after the crash");
    expect(await lab.projectContainers()).toHaveLength(1);
    // the earlier revision (moved to the deployment's predecessor) runs on the device again
    const previous = (await predecessorOf(id, "2.0.0"))!;
    expect(previous).toBeDefined();
    await eventually(async () => {
      const entries = await entriesOfDevice();
      return entries.some((e) => e[0] === id && e[2] === "failed") && entries.some((e) => e[0] === previous.id && e[1] === "2.0.0" && e[2] === "running") ? entries : undefined;
    }, 30_000, "the previous revision shown running on the device");
  });

  it("an upgrade in place with kill -9 of the agent between the new revision's download and its start: after a restart it rolls back, version 2 serves", async () => {
    const id = deploymentIds["2.0.0"];
    // the install step begins right after the download ended: the kill lands there
    const killed = lab.killAgentWhen((line) => line.includes(`3.0.0: install (deployment ${id})`));
    const patched = await lab.api("PATCH", `/api/v1/deployments/${id}`, { body: { version: "3.0.0", parameters: { greeting: "never shown" } } });
    expect(patched.status, patched.text).toBe(200);
    await killed;
    // both revisions' files were on the device when it died
    const releases = fs.readdirSync(path.join(lab.stateDir, "releases", id));
    expect(releases.filter((r) => r.startsWith("2.0.0-"))).toHaveLength(1);
    expect(releases.filter((r) => r.startsWith("3.0.0-")).length).toBeGreaterThanOrEqual(1);
    lab.startAgent();
    await eventually(async () => {
      const s = await lab.deviceState(id);
      return s?.state === "failed" && /rolled back on the device: .* 2\.0\.0 runs again/.test(s.message ?? "") && lab.agentOutput.some((l) => l.includes("3.0.0 failed; 2.0.0 runs again")) ? s : undefined;
    }, 120_000, "the failure after the restart, rolled back");
    expect(await lab.page()).toBe("version 2.0.0 says after the crash");
    expect(await lab.projectContainers()).toHaveLength(1);
    const installed = JSON.parse(fs.readFileSync(path.join(lab.stateDir, "installed.json"), "utf8"))[lab.applicationId];
    expect(installed).toMatchObject({ deploymentId: id, version: "2.0.0" });
  });

  it("removal, with kill -9 of the agent as soon as it begins the removal: after a restart the project is gone, no container left", async () => {
    expect(await lab.projectContainers()).toHaveLength(1);
    const id = deploymentIds["2.0.0"];
    const res = await lab.api("DELETE", `/api/v1/deployments/${id}`);
    expect(res.status, res.text).toBeLessThan(300);
    // the agent's own line at the start of the step (workloads.ts): the kill lands while `down` runs or just after
    await eventually(async () => (lab.agentOutput.some((l) => l.includes(`: remove (deployment ${id})`)) ? true : undefined), 60_000, "the removal under way");
    await lab.stopAgent("SIGKILL");
    const killed = [...lab.agentOutput];
    lab.startAgent();
    await eventually(async () => ((await lab.projectContainers()).length === 0 ? true : undefined), 60_000, "no container of the project");
    expect(await lab.page()).toBeNull();
    // the removal finished (by the killed process if it was that quick, else by the restarted one) and is recorded: no release of the application is left
    await eventually(async () => ([...killed, ...lab.agentOutput].some((l) => l.endsWith(`${lab.applicationId} removed`)) ? true : undefined), 60_000, "the removal recorded");
    expect(JSON.parse(fs.readFileSync(path.join(lab.stateDir, "installed.json"), "utf8"))[lab.applicationId]).toBeUndefined();
    expect(await lab.projectContainers()).toEqual([]);
  });

  it.skipIf(!withPrivateRegistry)("an image of a private registry is pulled through the service with a pull grant: the device never holds the registry's credential", async () => {
    const registry = lab.privateRegistry!;
    const id = await deploy(LAB_PRIVATE_VERSION, { greeting: "from a private registry" });
    await lab.waitForState(id, "running");
    expect(await lab.page()).toBe("version 4.0.0 says from a private registry");
    expect(await lab.projectContainers()).toHaveLength(1);
    // The engine holds no credential of that registry: by itself it cannot pull the image.
    await expect(lab.podman.podman(["pull", "--quiet", registry.image])).rejects.toThrow(/unauthorized|authentication required/i);
    // Nothing in the state directory holds the registry's password, and the grant's auth file is gone.
    const password = registry.credential.split(":")[1];
    for (const file of filesUnder(lab.stateDir)) expect(fs.readFileSync(file, "utf8"), file).not.toContain(password);
    expect(fs.existsSync(path.join(lab.stateDir, "pull-auth"))).toBe(false);
  });

  it.skipIf(!withPrivateRegistry)("the pull grant serves only its device, deployment and repositories, unexpired and unforged", async () => {
    const registry = lab.privateRegistry!;
    const deploymentId = deploymentIds[LAB_PRIVATE_VERSION];
    const pkg = await packageAsDevice(deploymentId);
    expect(pkg.status).toBe(200);
    const grant = pkg.body.pullGrant!;
    expect(grant.repositories).toEqual([{ repository: registry.image.replace(/:1$/, ""), proxy: `${registry.id}/fleet-private/busybox` }]);
    expect(Date.parse(grant.expiresAt) - Date.now()).toBeLessThanOrEqual(15 * 60_000);
    expect(JSON.stringify(pkg.body)).not.toContain(registry.credential.split(":")[1]);
    grantOfDevice = grant;

    const v2 = (p: string, token?: string, method = "GET") => proxyFetch(lab.service.url, p, token, method);
    const manifest = `${grant.repositories[0].proxy}/manifests/1`;
    // The grant reads the manifest through the service, as the registry has it.
    const ok = await v2(manifest, grant.token);
    expect(ok.status).toBe(200);
    const direct = await fetch(`${registry.server.url}/v2/fleet-private/busybox/manifests/1`, { headers: { accept: MANIFEST_TYPES, authorization: registry.server.authorization! } });
    expect(ok.headers.get("docker-content-digest")).toBe(direct.headers.get("docker-content-digest"));
    expect(await ok.text()).toBe(await direct.text());
    // Without a grant: the engines' challenge. A forged or expired grant: 401.
    const anonymous = await v2("");
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get("www-authenticate")).toMatch(/^Basic realm=/);
    expect((await v2(manifest)).status).toBe(401);
    const [header, payload, signature] = grant.token.split(".");
    expect((await v2(manifest, `${header}.${payload}.${signature.slice(0, -4)}AAAA`)).status).toBe(401);
    const key = pullGrantKey(new TextEncoder().encode(LAB_JWT_SECRET));
    const claims = JSON.parse(Buffer.from(payload, "base64url").toString("utf8"));
    const scope = { deviceId: claims.sub, organizationId: claims.org, fingerprint: claims.fp, deploymentId, repositories: [{ registryId: registry.id, repository: "fleet-private/busybox" }] };
    expect((await v2(manifest, await signPullGrant(key, scope, new Date(Date.now() - 60_000)))).status).toBe(401);
    // Another repository than the grant's: 403; anything but a pull: 405.
    expect((await v2(`${registry.id}/fleet-private/other/manifests/1`, grant.token)).status).toBe(403);
    expect((await v2(`${registry.id}/fleet-private/busybox/blobs/uploads/`, grant.token, "POST")).status).toBe(405);

    // A device the deployment does not target gets no package and so no grant (404), and a
    // grant naming it for this deployment, signed with the service's key, is refused (403).
    const token = await lab.call<{ token: string }>("POST", "/api/v1/enrollment-tokens", { name: "bystander 2" });
    const bystander = new DeviceSession(new JsonClient(lab.service.url));
    const enrolled = await bystander.enrollWith({ enrollmentToken: token.token, reportedDeviceId: "bystander-2" });
    expect(enrolled.status).toBe(200); // through the typed tRPC client: 200 (the REST facade answers 201)
    bystanderId = enrolled.body.deviceId;
    const refused = await bystander.call("GET", `/api/v1/agent/deployments/${deploymentId}/components/web`);
    expect(refused.status).toBe(404);
    expect(JSON.stringify(refused.body)).not.toContain("pullGrant");
    bystander.close();
    const forBystander = await signPullGrant(key, { ...scope, deviceId: enrolled.body.deviceId }, new Date(Date.now() + 60_000));
    const denied = await v2(manifest, forBystander);
    expect(denied.status).toBe(403);
    expect(await denied.json()).toEqual({ errors: [{ code: "DENIED", message: expect.stringMatching(/no longer targets this device/) }] });
  });

  it.skipIf(!withPrivateRegistry)("a private image pinned by digest (image: host/repo@sha256:...) is pulled through the service by that digest and runs; a device not targeted cannot pull it", async () => {
    const registry = lab.privateRegistry!;
    const id = await deploy(LAB_PRIVATE_DIGEST_VERSION, { greeting: "pinned" });
    await lab.waitForState(id, "running");
    expect(await lab.page()).toBe("version 5.0.0 says pinned");
    expect(await lab.projectContainers()).toHaveLength(1);
    // The container runs the image the digest names, pulled from the service's registry proxy by that digest.
    const proxied = `127.0.0.1:${lab.proxy.port}/${registry.id}/fleet-private/busybox@${registry.digest}`;
    const project = `fleet-${lab.applicationId}-web`;
    const [image] = (await lab.podman.podman(["ps", "--filter", `label=com.docker.compose.project=${project}`, "--format", "{{.Image}}"])).trim().split("\n");
    expect(image).toBe(proxied);
    const digests = JSON.parse(await lab.podman.podman(["image", "inspect", "--format", "{{json .RepoDigests}}", proxied])) as string[];
    expect(digests).toContain(proxied);
    // The deployment's grant reads that manifest by digest, as the registry has it; a grant naming a
    // device the deployment does not target (signed with the service's key) is refused.
    const pkg = await packageAsDevice(id);
    expect(pkg.status).toBe(200);
    const grant = pkg.body.pullGrant!;
    const byDigest = `${registry.id}/fleet-private/busybox/manifests/${registry.digest}`;
    const ok = await proxyFetch(lab.service.url, byDigest, grant.token);
    expect(ok.status).toBe(200);
    expect(ok.headers.get("docker-content-digest")).toBe(registry.digest);
    expect(`sha256:${createHash("sha256").update(Buffer.from(await ok.arrayBuffer())).digest("hex")}`).toBe(registry.digest);
    const key = pullGrantKey(new TextEncoder().encode(LAB_JWT_SECRET));
    const claims = JSON.parse(Buffer.from(grant.token.split(".")[1], "base64url").toString("utf8"));
    expect(bystanderId).not.toBe("");
    const forBystander = await signPullGrant(key, {
      deviceId: bystanderId, organizationId: claims.org, fingerprint: claims.fp, deploymentId: id,
      repositories: [{ registryId: registry.id, repository: "fleet-private/busybox" }],
    }, new Date(Date.now() + 60_000));
    expect((await proxyFetch(lab.service.url, byDigest, forBystander)).status).toBe(403);
  });

  it("a revoked certificate: the agent says so and stops asking (exit code 78)", async () => {
    const identity = JSON.parse(fs.readFileSync(path.join(lab.stateDir, "identity.json"), "utf8"));
    const exited = new Promise<number | null>((resolve) => lab.agent!.once("exit", (code) => resolve(code)));
    await lab.call("POST", `/api/v1/devices/${lab.deviceId}/certificates/${identity.certificateId}/revoke`, { reason: "Key compromise" });
    expect(await exited).toBe(78);
    expect(lab.agentOutput.join("\n")).toMatch(/refuses this device's certificate \(401/);
    // A pull grant issued to the revoked certificate is refused from now on.
    if (grantOfDevice) {
      const res = await fetch(`${lab.service.url}/v2/${grantOfDevice.repositories[0].proxy}/manifests/1`, {
        headers: { accept: MANIFEST_TYPES, authorization: `Basic ${Buffer.from(`${grantOfDevice.username}:${grantOfDevice.token}`).toString("base64")}` },
      });
      expect(res.status).toBe(403);
    }
  });
});
