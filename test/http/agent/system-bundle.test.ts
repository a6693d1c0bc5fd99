// An oci:// system image (a RAUC bundle kept in an OCI registry, docs/os-updates.md) reaches the
// device through the service: the desired state names the service's relay (bundlePath), and
// GET /api/v1/agent/deployments/{id}/components/{name}/bundle streams the registry's blob of the
// component's digest, read with the organization's sealed credential, a Range request going on
// where a download stopped. Real: the service, its database, Debian's docker-registry with Basic
// auth, the device's token. The agent's download of it: test/unit/agent/os-update.test.ts.
import crypto from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { peersAvailable } from "../../support/peers.js";
import { startOciRegistry, sha256, type OciRegistryServer } from "../../support/oci-registry.js";
import { createEnrollmentToken, enroll, ensureCa, heartbeat, type EnrolledDevice } from "./fleet-support.js";
import { importVersion } from "../deployments/support.js";

const BUNDLE = crypto.randomBytes(256 * 1024);
const DIGEST = sha256(BUNDLE);
const MISSING = `sha256:${"ab".repeat(32)}`;

describe.skipIf(!peersAvailable("docker-registry", "htpasswd"))("an oci:// system image relayed to the device", { timeout: 120_000 }, () => {
  let h: Harness;
  let acme: Tenant;
  let globex: Tenant;
  let registry: OciRegistryServer;
  let gateway: EnrolledDevice;
  let bystander: EnrolledDevice;
  let stranger: EnrolledDevice;
  let deploymentId = "";
  let missingDeploymentId = "";
  let bundlePath = "";

  const download = async (path: string, device: EnrolledDevice | null, range?: string) => {
    const res = await fetch(`${h.url}${path}`, {
      headers: { ...(device ? { authorization: `Bearer ${await device.token()}` } : {}), ...(range ? { range } : {}) },
    });
    const body = Buffer.from(await res.arrayBuffer());
    return { status: res.status, headers: res.headers, body, json: () => JSON.parse(body.toString("utf8")) };
  };

  async function deploy(version: string, label: string): Promise<string> {
    const created = await h.api("POST", "/api/v1/deployments", {
      key: acme.key,
      body: { name: `os ${version}`, applicationId: appId, version, profileId: "compose-main", parameters: {}, target: { labelSelector: { fleet: label } } },
    });
    expect(created.status, created.text).toBe(201);
    const started = await h.api("POST", `/api/v1/deployments/${created.body.id}/start`, { key: acme.key });
    expect(started.status, started.text).toBeLessThan(300);
    return created.body.id;
  }
  let appId = "";

  beforeAll(async () => {
    registry = await startOciRegistry({ basic: { username: "os-builder", password: "s3cret-os-builder" } });
    h = await createHarness({ RATE_LIMIT_PER_SOURCE: "0", RATE_LIMIT_PER_CREDENTIAL: "0" });
    acme = await h.createTenant("Acme OS bundles");
    globex = await h.createTenant("Globex OS bundles");
    // the bundle as `oras push` leaves it: one layer, the .raucb itself
    const layer = await registry.pushBlob("os/gateway", BUNDLE, "application/vnd.rauc.bundle");
    const config = await registry.pushBlob("os/gateway", "{}", "application/vnd.oci.empty.v1+json");
    await registry.pushManifest("os/gateway", "2.0.0", { schemaVersion: 2, mediaType: "application/vnd.oci.image.manifest.v1+json", artifactType: "application/vnd.rauc.bundle", config, layers: [layer] });
    const created = await h.api("POST", "/api/v1/registries/oci", {
      key: acme.key, body: { name: "OS images", url: registry.url, authType: "BASIC", credential: "os-builder:s3cret-os-builder", verifyTls: false },
    });
    expect(created.status, created.text).toBe(201);
    const repository = `oci://${new URL(registry.url).host}/os/gateway`;
    appId = await importVersion(h, acme.org.id, { version: "2.0.0", appKey: "gateway-os", systemImage: { repository, digest: DIGEST }, parametersYaml: "  {}\n" });
    await importVersion(h, acme.org.id, { version: "2.1.0", appKey: "gateway-os", systemImage: { repository, digest: MISSING }, parametersYaml: "  {}\n" });

    await ensureCa(h, acme.key);
    await ensureCa(h, globex.key);
    const facts = { arch: "arm64", os: "linux", rauc: true };
    gateway = await enroll(h, (await createEnrollmentToken(h, acme.key, { labels: { fleet: "canary" } })).token, { facts });
    bystander = await enroll(h, (await createEnrollmentToken(h, acme.key, { labels: { fleet: "elsewhere" } })).token, { facts });
    stranger = await enroll(h, (await createEnrollmentToken(h, globex.key, { labels: { fleet: "canary" } })).token, { facts });
    deploymentId = await deploy("2.0.0", "canary");
  }, 120_000);

  afterAll(async () => {
    await h?.close();
    await registry?.close();
  });

  it("the desired state names the service's relay for an oci:// bundle, no URL of the registry", async () => {
    const res = await heartbeat(h, gateway, { facts: { rauc: true } });
    expect(res.status, res.text).toBe(200);
    const entry = res.body.deployments.find((d: { deploymentId: string }) => d.deploymentId === deploymentId);
    bundlePath = `/api/v1/agent/deployments/${deploymentId}/components/os/bundle`;
    expect(entry.systemImage).toEqual({
      component: "os", url: null, bundlePath, repository: `oci://${new URL(registry.url).host}/os/gateway`, digest: DIGEST, version: "2.0.0",
    });
  });

  it("streams the registry's blob of the component's digest to the targeted device, read with the organization's credential", async () => {
    const whole = await download(bundlePath, gateway);
    expect(whole.status).toBe(200);
    expect(whole.body.equals(BUNDLE)).toBe(true);
    expect(whole.headers.get("content-length")).toBe(String(BUNDLE.length));
    expect(whole.headers.get("docker-content-digest")).toBe(DIGEST);
  });

  it("a Range request goes on where a download stopped (206, the rest of the bytes)", async () => {
    const rest = await download(bundlePath, gateway, "bytes=100000-");
    expect(rest.status).toBe(206);
    expect(rest.headers.get("content-range")).toBe(`bytes 100000-${BUNDLE.length - 1}/${BUNDLE.length}`);
    expect(rest.body.equals(BUNDLE.subarray(100_000))).toBe(true);
  });

  it("no token is 401; a device the deployment does not target, and another tenant's device, get 404 and no byte", async () => {
    const anonymous = await download(bundlePath, null);
    expect(anonymous.status).toBe(401);
    for (const device of [bystander, stranger]) {
      const refused = await download(bundlePath, device);
      expect(refused.status).toBe(404);
      expect(refused.json()).toMatchObject({ message: "Deployment not found" });
    }
  });

  it("bad path parameters are 400 naming them; a compose component is no bundle (404)", async () => {
    const badId = await download("/api/v1/agent/deployments/not-a-uuid/components/os/bundle", gateway);
    expect(badId.status).toBe(400);
    expect(badId.json().message).toContain("deploymentId");
    const badName = await download(`/api/v1/agent/deployments/${deploymentId}/components/OS!/bundle`, gateway);
    expect(badName.status).toBe(400);
    expect(badName.json().message).toContain("component");
    const compose = await download(`/api/v1/agent/deployments/${deploymentId}/components/gateway/bundle`, gateway);
    expect(compose.status).toBe(404);
    expect(compose.json().message).toContain('Component "gateway" is not a system image kept in an OCI registry');
  });

  it("a digest the registry does not hold is 404 naming it; no registry credential leaves the service", async () => {
    missingDeploymentId = await deploy("2.1.0", "canary");
    const res = await download(`/api/v1/agent/deployments/${missingDeploymentId}/components/os/bundle`, gateway);
    expect(res.status).toBe(404);
    expect(res.json().message).toBe(`the bundle ${MISSING} is not in oci://${new URL(registry.url).host}/os/gateway at its registry`);
    expect(res.body.toString("utf8")).not.toContain("s3cret-os-builder");
  });
});
