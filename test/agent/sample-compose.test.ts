// The README's "Run a real device", as a newcomer follows it: `npm run samples:compose`
// (scripts/sample-compose.ts, run as a child process like npm runs it) pushes a container image,
// a compose package and an application package into a real OCI registry (Debian's
// docker-registry on loopback), adds the registry to the key's organization and syncs it:
//   1. what it pushed is an application package the service's OCI import accepts (the catalog
//      holds hello-web with its compose profile and parameters), a compose package the service
//      reads for a device, and an image whose layer matches its config; a second version is
//      imported into the same registry;
//   2. with Podman: the real agent (`fleet-agent enroll` and `run`, agent/bin) enrolled with a
//      token, a deployment of hello-web to it by label, the container answering on the port the
//      deployment gave with the greeting it gave; stopping the deployment removes it.
import { execFile, spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { gunzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AGENT_BIN } from "../support/agent-lab.js";
import { createHarness, type Harness, type Tenant } from "../support/harness.js";
import { freePort, sha256, startOciRegistry, type OciRegistryServer } from "../support/oci-registry.js";
import { onPath, peerAvailable } from "../support/peers.js";
import { startPodmanHarness, type PodmanHarness } from "../support/podman.js";
import { eventually, ROOT } from "../support/server-process.js";

const runFile = promisify(execFile);
const withPodman = peerAvailable("podman");
const MANIFEST_ACCEPT = { accept: "application/vnd.oci.image.manifest.v1+json" };

let h: Harness;
let tenant: Tenant;
let podman: PodmanHarness | null = null;
let registry: OciRegistryServer;
let agent: ChildProcess | null = null;
const agentOutput: string[] = [];
const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), "sample-compose-agent-"));

/** `npm run samples:compose -- ...args`: what it printed, once it exited 0. */
async function samplesCompose(args: string[]): Promise<string[]> {
  const { stdout } = await runFile(process.execPath, ["--import", "tsx", "scripts/sample-compose.ts", ...args], { cwd: ROOT, timeout: 120_000 });
  return stdout.trim().split("\n");
}

/** a blob or manifest of the registry, as JSON or bytes */
async function registryGet(p: string, headers: Record<string, string> = {}) {
  const res = await fetch(`${registry.url}/v2/${p}`, { headers });
  expect(res.status, p).toBe(200);
  return Buffer.from(await res.arrayBuffer());
}

describe.skipIf(!peerAvailable("docker-registry") || !onPath("busybox"))("npm run samples:compose (the README's Run a real device)", { timeout: 240_000 }, () => {
  beforeAll(async () => {
    // with Podman, its harness's registry (the engine's settings name it insecure, runc, ulimits); else a registry alone
    podman = withPodman ? await startPodmanHarness() : null;
    registry = podman?.registry ?? await startOciRegistry();
    h = await createHarness({ HEARTBEAT_INTERVAL_SECONDS: "5" });
    tenant = await h.createTenant("Sample Compose");
  }, 180_000);

  afterAll(async () => {
    if (agent && agent.exitCode === null && agent.signalCode === null) {
      const exited = new Promise((resolve) => agent!.once("exit", resolve));
      agent.kill("SIGKILL");
      await exited;
    }
    // only this file's containers: other test files may run containers at the same time
    const apps = h ? await h.api("GET", "/api/v1/applications?q=hello-web", { key: tenant.key }).catch(() => null) : null;
    const appId = apps?.body?.items?.[0]?.id;
    if (podman && appId) {
      const names = (await podman.podman(["ps", "-a", "--filter", `label=com.docker.compose.project=fleet-${appId}-web`, "--format", "{{.Names}}"]).catch(() => "")).split("\n").filter(Boolean);
      if (names.length) await podman.podman(["rm", "-f", ...names]).catch(() => undefined);
      await podman.podman(["rmi", "--force", "--ignore", `${new URL(registry.url).host}/samples/busybox:1`]).catch(() => undefined);
    }
    await h?.close();
    if (podman) await podman.close();
    else await registry?.close();
    fs.rmSync(stateDir, { recursive: true, force: true });
  }, 120_000);

  it("pushes an application package the OCI import accepts, its compose package and its image; adds and syncs the registry", async () => {
    const host = new URL(registry.url).host;
    const printed = await samplesCompose(["--registry", registry.url, "--url", h.url, "--key", tenant.key]);
    expect(printed[0]).toBe(`pushed the sample compose application 'hello-web' 1.0.0 to ${registry.url}:`);
    expect(printed).toContain(`  add it as an OCI registry: URL ${registry.url}, repository samples/hello-web (console: Registries -> Add OCI registry)`);
    expect(printed.at(-1)).toMatch(new RegExp(`^  added at ${h.url} as OCI registry 'sample compose apps' \\(id [0-9a-f-]{36}\\) and synced: 1 found, 1 imported, 0 updated, 0 skipped, 0 errors$`));

    // the registry as stored: the URL, and the application package's repository listed
    const registries = await h.api("GET", "/api/v1/registries/oci", { key: tenant.key });
    expect(registries.body.items).toHaveLength(1);
    expect(registries.body.items[0]).toMatchObject({ name: "sample compose apps", url: registry.url, repositories: ["samples/hello-web"], authType: "NONE" });

    // the catalog: hello-web 1.0.0 from the OCI registry, its compose profile naming the compose package, two parameters
    const apps = await h.api("GET", "/api/v1/applications?q=hello-web", { key: tenant.key });
    expect(apps.body.items.map((a: { key: string }) => a.key)).toEqual(["hello-web"]);
    const app = (await h.api("GET", `/api/v1/applications/${apps.body.items[0].id}`, { key: tenant.key })).body;
    expect(app).toMatchObject({
      key: "hello-web", name: "Hello Web", latestVersion: "1.0.0", category: "samples", tags: ["sample", "compose"], vendor: { name: "Fleet Manager samples" },
      source: { type: "oci", registryName: "sample compose apps", path: "samples/hello-web:1.0.0" }, warnings: [],
    });
    expect(app.profiles).toEqual([expect.objectContaining({
      id: "compose", type: "compose",
      components: [{ name: "web", properties: { repository: `oci://${host}/samples/hello-web-compose`, revision: "1.0.0", wait: true, timeout: "2m0s" } }],
    })]);
    expect(app.parameters).toMatchObject({
      greeting: { value: "hello", targets: [{ pointer: "GREETING", components: ["web"] }], schema: { type: "string" } },
      port: { value: 8080, targets: [{ pointer: "HTTP_PORT", components: ["web"] }], schema: { type: "integer", minimum: 1024, maximum: 65535 } },
    });

    // the compose package: one compose layer naming the image, published on ${HTTP_PORT}
    const composeManifest = JSON.parse((await registryGet("samples/hello-web-compose/manifests/1.0.0", MANIFEST_ACCEPT)).toString());
    expect(composeManifest.layers.map((l: { mediaType: string }) => l.mediaType)).toEqual(["application/vnd.fleet.compose.v1+yaml"]);
    const compose = (await registryGet(`samples/hello-web-compose/blobs/${composeManifest.layers[0].digest}`)).toString();
    expect(compose).toContain(`image: ${host}/samples/busybox:1`);
    expect(compose).toContain("${HTTP_PORT}:8080");

    // the image: one gzip layer whose uncompressed digest is the config's diff_id, holding a static busybox and httpd
    const imageManifest = JSON.parse((await registryGet("samples/busybox/manifests/1", MANIFEST_ACCEPT)).toString());
    const config = JSON.parse((await registryGet(`samples/busybox/blobs/${imageManifest.config.digest}`)).toString());
    const tar = gunzipSync(await registryGet(`samples/busybox/blobs/${imageManifest.layers[0].digest}`));
    expect(config).toMatchObject({ os: "linux", rootfs: { type: "layers", diff_ids: [sha256(tar)] } });
    expect(tar.includes("./bin/busybox")).toBe(true);
    expect(tar.includes("./bin/httpd")).toBe(true);

    // a second version into the same registry: found again by name, both versions in the catalog
    const again = await samplesCompose(["--registry", registry.url, "--url", h.url, "--key", tenant.key, "--version", "1.1.0"]);
    expect(again.at(-1)).toMatch(/^  found at .* as OCI registry 'sample compose apps' \(id [0-9a-f-]{36}\) and synced: 2 found, 1 imported, 0 updated, 0 skipped, 0 errors$/);
    const versions = await h.api("GET", `/api/v1/applications/${app.id}/versions`, { key: tenant.key });
    expect(versions.body.items.map((v: { version: string }) => v.version)).toEqual(["1.1.0", "1.0.0"]);
  });

  it("without a key it prints what to add and how to let it add it", async () => {
    const printed = await samplesCompose(["--registry", registry.url, "--url", h.url]);
    expect(printed.at(-1)).toBe(`  or let this command add it: npm run samples:compose -- --registry ${registry.url} --url ${h.url} --key fm_...   (a key with registries:read and registries:write)`);
  });

  it("refuses a registry that does not answer, naming it", async () => {
    const port = await freePort();
    const refused = await samplesCompose(["--registry", `127.0.0.1:${port}`]).catch((err: { code?: number; stderr?: string }) => err);
    expect(refused).toMatchObject({ code: 1, stderr: `npm run samples:compose: could not push to the registry at http://127.0.0.1:${port}: nothing answers there (is docker-registry running?)\n` });
  });

  it.skipIf(!withPodman)("the real agent runs it: enrolled with a token, deployed by label, the page answers on the deployment's port; stopping removes it", async () => {
    await h.api("POST", "/api/v1/ca-certificates/generate", { key: tenant.key, body: { name: "Sample CA", commonName: "Sample CA" } });
    const token = (await h.api("POST", "/api/v1/enrollment-tokens", { key: tenant.key, body: { name: "my machine" } })).body.token as string;
    const agentEnv = { ...process.env, ...podman!.env };
    const enrolled = await runFile(process.execPath, [AGENT_BIN, "enroll", "--url", h.url, "--token", token, "--name", "my-laptop", "--label", "site=home", "--state-dir", stateDir], { env: agentEnv, timeout: 60_000 });
    expect(enrolled.stdout).toMatch(/^enrolled as device [0-9a-f-]{36}/);
    agent = spawn(process.execPath, [AGENT_BIN, "run", "--state-dir", stateDir], { env: agentEnv, stdio: ["ignore", "pipe", "pipe"] });
    for (const stream of [agent.stdout!, agent.stderr!]) stream.on("data", (chunk: Buffer) => agentOutput.push(chunk.toString()));

    const appId = (await h.api("GET", "/api/v1/applications?q=hello-web", { key: tenant.key })).body.items[0].id;
    const port = await freePort();
    const created = await h.api("POST", "/api/v1/deployments", {
      key: tenant.key,
      body: { name: "hello on my laptop", applicationId: appId, version: "1.0.0", profileId: "compose", parameters: { greeting: "hello from my laptop", port }, target: { labelSelector: { site: "home" } } },
    });
    expect(created.status, created.text).toBe(201);
    expect((await h.api("POST", `/api/v1/deployments/${created.body.id}/start`, { key: tenant.key })).status).toBe(200);
    const stateOf = async () => (await h.api("GET", `/api/v1/deployments/${created.body.id}/devices`, { key: tenant.key })).body.items[0];
    await eventually(async () => {
      const device = await stateOf();
      if (device?.state === "failed") throw new Error(`the device failed: ${device.message}\n${agentOutput.join("")}`);
      return device?.state === "running" || undefined;
    }, 180_000, `the device running hello-web\n${agentOutput.join("")}`);
    const page = await fetch(`http://127.0.0.1:${port}/`);
    expect(await page.text()).toBe("hello-web 1.0.0 says hello from my laptop\n");

    expect((await h.api("POST", `/api/v1/deployments/${created.body.id}/stop`, { key: tenant.key, body: {} })).status).toBe(200);
    await eventually(async () => (await h.api("GET", `/api/v1/deployments/${created.body.id}/removal-status`, { key: tenant.key })).body.complete || undefined, 120_000, "the removal confirmed");
    const left = await podman!.podman(["ps", "-a", "--filter", `label=com.docker.compose.project=fleet-${appId}-web`, "--format", "{{.Names}}"]);
    expect(left.trim()).toBe("");
  });
});
