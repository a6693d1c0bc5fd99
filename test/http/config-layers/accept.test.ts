// POST /config-layers/accept (docs/configuration.md, "Drift"): a device reports a file changed
// by hand with its content, as the agent's drift report carries it; accepting writes that
// content into the device's override layer (created, then a new revision of it), the next
// heartbeat hands the device a revision whose file is what it has on disk (same sha256: the
// agent rewrites nothing), and the device is in sync once it reports it applied. 409 naming the
// path: nothing drifted, a path that did not drift, a file reported without content (over the
// limit), a removed file, a file taking in a secret. Another tenant's device is a 404.
import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { expectSecured } from "../../support/security.js";
import type { EnrolledDevice } from "../agent/fleet-support.js";
import { enrollFleet } from "../deployments/support.js";

let h: Harness;
let acme: Tenant;
let globex: Tenant;
let device: EnrolledDevice;

const sha = (data: string) => createHash("sha256").update(data).digest("hex");
const b64 = (text: string) => Buffer.from(text, "utf8").toString("base64");
const api = (method: string, path: string, body?: unknown, key = acme.key) => h.api(method, path, { key, ...(body !== undefined ? { body } : {}) });

/** The device's heartbeat (it is given secrets: past the harness's secret watch). */
async function beat(body: Record<string, unknown> = {}) {
  const res = await fetch(`${h.url}/api/v1/agent/heartbeat`, {
    method: "POST", headers: { authorization: `Bearer ${await device.token()}`, "content-type": "application/json" }, body: JSON.stringify(body),
  });
  const text = await res.text();
  expect(res.status, text).toBe(200);
  return (JSON.parse(text) as { configuration?: { revision: string; full: boolean; files?: Array<{ path: string; contentBase64: string; sha256: string; mode: string; layer: string }> } }).configuration!;
}

const applied = (revision: string, drift: unknown[] = []) => beat({ configuration: { revision, state: "applied", appliedRevision: revision, drift } });

beforeAll(async () => {
  h = await createHarness();
  acme = await h.createTenant("Acme Accept");
  globex = await h.createTenant("Globex Accept");
  [device] = await enrollFleet(h, acme.key, 1, { labels: { site: "berlin" } });
  expect((await api("PATCH", `/api/v1/devices/${device.deviceId}`, { name: "Gateway 7" })).status).toBe(200);
  const layer = await api("POST", "/api/v1/config-layers", {
    name: "defaults", kind: "organization", secrets: { TOKEN: "t0k3n-secret" },
    files: [
      { path: "/etc/fleet/mqtt.conf", content: "url=mqtts://{{ device.labels.site }}.broker\n", mode: "0640" },
      { path: "/etc/fleet/ntp.conf", content: "server 10.0.0.1\n" },
      { path: "/etc/fleet/token", content: "{{ vars.TOKEN }}\n" },
      { path: "/etc/fleet/big.bin", contentBase64: b64("big") },
    ],
  });
  expect(layer.status, layer.text).toBe(201);
});

afterAll(async () => {
  await h?.close();
});

describe("accepting a drifted file as the device's override", () => {
  it("writes the reported content into the device's override layer; the device is then in sync without a rewrite", async () => {
    const first = await beat();
    await applied(first.revision);
    expect((await api("POST", "/api/v1/config-layers/accept", { deviceId: device.deviceId })).status).toBe(409); // nothing drifted yet

    // the agent's report: the edited file with its content, the big one without (over the limit), a removed one
    const edited = "url=mqtts://local.broker\n# tuned by hand\n";
    await applied(first.revision, [
      { path: "/etc/fleet/mqtt.conf", sha256: sha(edited), contentBase64: b64(edited) },
      { path: "/etc/fleet/big.bin", sha256: sha("x".repeat(10)) },
      { path: "/etc/fleet/ntp.conf" },
      { path: "/etc/fleet/token", sha256: sha("other\n"), contentBase64: b64("other\n") },
    ]);
    const state = await h.services.prisma.deviceConfigState.findUniqueOrThrow({ where: { deviceId: device.deviceId } });
    expect(JSON.stringify(state.drift)).not.toContain(b64(edited)); // sealed at rest
    const view = await api("GET", `/api/v1/config-layers/effective?deviceId=${device.deviceId}`);
    expect(view.body.reported.drift[0]).toEqual({ path: "/etc/fleet/mqtt.conf", sha256: sha(edited) });

    const refusals = [
      [["/etc/fleet/big.bin"], 'paths: device "Gateway 7" reported no content of /etc/fleet/big.bin: it is over 131072 bytes (the layer file limit); restore it or put its content in a layer'],
      [["/etc/fleet/ntp.conf"], 'paths: /etc/fleet/ntp.conf was removed on device "Gateway 7": a layer cannot declare a missing file; restore it or take it out of its layer'],
      [["/etc/fleet/token"], "paths: /etc/fleet/token takes in a secret: its content is not copied into a layer; restore it"],
      [["/etc/fleet/other.conf"], 'paths: /etc/fleet/other.conf did not drift on device "Gateway 7" (drifted: /etc/fleet/mqtt.conf, /etc/fleet/big.bin, /etc/fleet/ntp.conf, /etc/fleet/token)'],
      [undefined, 'paths: device "Gateway 7" reported no content of /etc/fleet/big.bin: it is over 131072 bytes (the layer file limit); restore it or put its content in a layer'],
    ] as const;
    for (const [paths, message] of refusals) {
      const res = await api("POST", "/api/v1/config-layers/accept", { deviceId: device.deviceId, ...(paths ? { paths } : {}) });
      expect(res.status, res.text).toBe(409);
      expect(res.body.message).toBe(message);
    }
    expect(await h.services.prisma.configLayer.count({ where: { organizationId: acme.org.id, kind: "device" } })).toBe(0);
    expect((await api("POST", "/api/v1/config-layers/accept", { deviceId: device.deviceId, paths: ["/etc/fleet/mqtt.conf"] }, globex.key)).status).toBe(404);

    const accepted = await api("POST", "/api/v1/config-layers/accept", { deviceId: device.deviceId, paths: ["/etc/fleet/mqtt.conf"] });
    expect(accepted.status, accepted.text).toBe(200);
    expect(accepted.body).toMatchObject({ deviceId: device.deviceId, layer: "gateway-7-override", revision: 1, created: true, paths: ["/etc/fleet/mqtt.conf"] });
    const audit = await h.services.prisma.auditEntry.findFirst({ where: { action: "config-layers.accept", entityId: device.deviceId } });
    expect(audit?.message).toBe("accept /etc/fleet/mqtt.conf into layer gateway-7-override (revision 1)");
    const layer = await api("GET", `/api/v1/config-layers/${accepted.body.layerId}`);
    expect(layer.body).toMatchObject({ kind: "device", deviceId: device.deviceId, content: { comment: 'accepted from device "Gateway 7": /etc/fleet/mqtt.conf' } });
    expect(layer.body.content.files).toEqual([expect.objectContaining({ path: "/etc/fleet/mqtt.conf", mode: "0640", binary: true, contentBase64: b64(edited) })]);

    // the next answer holds the device's own content: the same sha256 it reported, so nothing is rewritten
    const next = await beat();
    expect(next).toMatchObject({ full: true });
    expect(next.revision).not.toBe(first.revision);
    const mqtt = next.files!.find((f) => f.path === "/etc/fleet/mqtt.conf")!;
    expect(mqtt).toMatchObject({ sha256: sha(edited), contentBase64: b64(edited), mode: "0640", layer: "gateway-7-override" });
    // the accepted path drifts no more; the others still do
    const after = await api("GET", `/api/v1/config-layers/effective?deviceId=${device.deviceId}`);
    expect(after.body.reported.drift.map((d: { path: string }) => d.path)).toEqual(["/etc/fleet/big.bin", "/etc/fleet/ntp.conf", "/etc/fleet/token"]);
    await applied(next.revision);
    const synced = await api("GET", `/api/v1/config-layers/effective?deviceId=${device.deviceId}`);
    expect(synced.body).toMatchObject({ inSync: true, revision: next.revision, reported: { drift: [] } });
    expect(synced.body.files.find((f: { path: string }) => f.path === "/etc/fleet/mqtt.conf")).toMatchObject({ layer: "gateway-7-override", overrode: [{ layer: "defaults" }] });

    // a second accept: a new revision of the same override layer, its other files kept
    const again = "url=mqtts://other.broker\n";
    const ntp = "server 192.168.1.1\n";
    await applied(next.revision, [{ path: "/etc/fleet/ntp.conf", sha256: sha(ntp), contentBase64: b64(ntp) }, { path: "/etc/fleet/mqtt.conf", sha256: sha(again), contentBase64: b64(again) }]);
    const second = await api("POST", "/api/v1/config-layers/accept", { deviceId: device.deviceId });
    expect(second.status, second.text).toBe(200);
    expect(second.body).toMatchObject({ layerId: accepted.body.layerId, revision: 2, created: false, paths: ["/etc/fleet/ntp.conf", "/etc/fleet/mqtt.conf"] });
    const files = (await api("GET", `/api/v1/config-layers/${accepted.body.layerId}`)).body.content.files as Array<{ path: string; contentBase64: string; mode: string }>;
    expect(files.map((f) => [f.path, Buffer.from(f.contentBase64, "base64").toString(), f.mode]).sort()).toEqual([
      ["/etc/fleet/mqtt.conf", again, "0640"], ["/etc/fleet/ntp.conf", ntp, "0644"],
    ]);
  });

  it("is config:write and another tenant's device is a 404", async () => {
    await expectSecured(h, acme, globex, {
      method: "POST", path: "/api/v1/config-layers/accept", body: { deviceId: device.deviceId }, permission: "config:write", foreignPath: "/api/v1/config-layers/accept",
    });
  });

  it("a bad body is a 400 naming the field", async () => {
    const res = await api("POST", "/api/v1/config-layers/accept", { deviceId: "nope" });
    expect(res.status).toBe(400);
    expect(res.text).toContain("deviceId");
  });
});
