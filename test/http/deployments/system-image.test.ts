// A system image (a RAUC bundle, docs/os-updates.md) as a component of an application version:
// admitted from the manifest with its digest, shown in the version's profile, and a deployment
// of it skips the devices whose agent does not report RAUC (fact `rauc`), naming why, while the
// devices that do report it are given the version. The device side (the agent driving RAUC) is
// test/agent/os-update/rauc.test.ts.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { createEnrollmentToken, enroll, ensureCa, type EnrolledDevice } from "../agent/fleet-support.js";
import { agentHeartbeat, importVersion } from "./support.js";

const DIGEST = `sha256:${"9d".repeat(32)}`;
const BUNDLE = "https://files.example/acme-gateway-2.0.0.raucb";

let h: Harness;
let acme: Tenant;
let appId = "";
let withRauc: EnrolledDevice[] = [];
let withoutRauc: EnrolledDevice;
let raucFalse: EnrolledDevice;

beforeAll(async () => {
  h = await createHarness();
  acme = await h.createTenant("Acme system images");
  appId = await importVersion(h, acme.org.id, { version: "2.0.0", appKey: "gateway-os", systemImage: { repository: BUNDLE, digest: DIGEST }, parametersYaml: "  {}\n" });
  await ensureCa(h, acme.key);
  const token = await createEnrollmentToken(h, acme.key, { labels: { site: "hamburg" }, maxUses: 10 });
  const rauc = { arch: "arm64", os: "linux", rauc: true, "rauc.compatible": "acme-gateway-v2", "rauc.bootedSlot": "A" };
  withRauc = await Promise.all([enroll(h, token.token, { facts: rauc }), enroll(h, token.token, { facts: rauc })]);
  withoutRauc = await enroll(h, token.token, { facts: { arch: "arm64", os: "linux" } });
  raucFalse = await enroll(h, token.token, { facts: { arch: "arm64", os: "linux", rauc: false } });
}, 120_000);

afterAll(async () => {
  await h?.close();
});

describe("system images", () => {
  it("the application's profile shows the system-image component with its digest", async () => {
    const res = await h.api("GET", `/api/v1/applications/${appId}`, { key: acme.key });
    expect(res.status, res.text).toBe(200);
    const components = res.body.profiles[0].components;
    expect(components).toEqual([
      expect.objectContaining({ name: "gateway" }),
      { name: "os", properties: { type: "system-image", repository: BUNDLE, revision: "2.0.0", digest: DIGEST } },
    ]);
    expect(components[0].properties.type).toBeUndefined();
  });

  it("a deployment skips the devices without RAUC with the reason and gives the version to those with it", async () => {
    const created = await h.api("POST", "/api/v1/deployments", {
      key: acme.key,
      body: { name: "os 2.0.0", applicationId: appId, version: "2.0.0", profileId: "compose-main", parameters: {}, target: { labelSelector: { site: "hamburg" } } },
    });
    expect(created.status, created.text).toBe(201);
    const started = await h.api("POST", `/api/v1/deployments/${created.body.id}/start`, { key: acme.key });
    expect(started.status, started.text).toBe(200);
    expect(started.body.progress).toMatchObject({ total: 4, pending: 2, skipped: 2 });

    const skipped = await h.api("GET", `/api/v1/deployments/${created.body.id}/devices?state=skipped`, { key: acme.key });
    expect(skipped.status, skipped.text).toBe(200);
    expect(skipped.body.items.map((d: { deviceId: string }) => d.deviceId).sort()).toEqual([withoutRauc.deviceId, raucFalse.deviceId].sort());
    for (const item of skipped.body.items) {
      expect(item.reason).toBe("the profile installs a system image (component os, a RAUC bundle) and the device does not report RAUC (fact rauc); see docs/os-updates.md");
    }
    const desired = await agentHeartbeat(h, withRauc[0]);
    expect(desired.map((d) => [d.deploymentId, d.version])).toEqual([[created.body.id, "2.0.0"]]);
    expect(await agentHeartbeat(h, withoutRauc)).toEqual([]);
  });
});
