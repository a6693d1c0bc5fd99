// /api/v1/config-layers over HTTP with enrolled devices speaking the real heartbeat: layers
// (organization default, selector layers at an order, a device override) with variables,
// files and sealed secrets; the effective configuration with provenance; revisions and a
// rollback; templating; the heartbeat's configuration (full until applied, then only the
// revision), the device's report stored, deployment parameters taking {{ vars.NAME }};
// tenants (404), permissions (403) and bad input (400/409 naming the field, nothing stored).
// Secrets are never answered: every answer of the run is searched for them.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHash } from "node:crypto";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { expectSecured } from "../../support/security.js";
import { heartbeat, type EnrolledDevice } from "../agent/fleet-support.js";
import { enrollFleet, importVersion } from "../deployments/support.js";

const SECRET = "s3cr3t-broker-password-4711";

let h: Harness;
let acme: Tenant;
let globex: Tenant;
let devices: EnrolledDevice[];
const answers: string[] = [];

async function api(method: string, path: string, body?: unknown, key = acme.key) {
  const res = await h.api(method, path, { key, ...(body !== undefined ? { body } : {}) });
  answers.push(res.text);
  return res;
}

/**
 * A heartbeat past the harness's secret watch: the device is the one party that is given the
 * secrets' values (in `configuration.vars`); every other answer is still watched.
 */
async function beat(device: EnrolledDevice, body: Record<string, unknown> = {}) {
  const res = await fetch(`${h.url}/api/v1/agent/heartbeat`, {
    method: "POST", headers: { authorization: `Bearer ${await device.token()}`, "content-type": "application/json" }, body: JSON.stringify(body),
  });
  const text = await res.text();
  expect(res.status, text).toBe(200);
  return JSON.parse(text) as { configuration?: Record<string, unknown>; deployments: Array<{ parameters: Record<string, Record<string, unknown>>; parametersHash?: string }> };
}

const layerCount = () => h.services.prisma.configLayer.count({ where: { organizationId: acme.org.id } });
const b64 = (text: string) => Buffer.from(text, "utf8").toString("base64");

let orgLayer: string;
let berlinLayer: string;
let pilotLayer: string;

beforeAll(async () => {
  h = await createHarness();
  acme = await h.createTenant("Acme Config");
  globex = await h.createTenant("Globex Config");
  devices = await enrollFleet(h, acme.key, 3, { labels: { site: "berlin" } });
  // device 0: berlin pilot; device 1: berlin; device 2: munich
  for (const [i, labels] of [[0, { site: "berlin", tier: "pilot" }], [2, { site: "munich" }]] as const) {
    const res = await api("PATCH", `/api/v1/devices/${devices[i].deviceId}`, { name: `dev-${i}`, labels });
    expect(res.status, res.text).toBe(200);
  }
  expect((await api("PATCH", `/api/v1/devices/${devices[1].deviceId}`, { name: "dev-1" })).status).toBe(200);
});
afterAll(async () => {
  // no answer of the whole run held a secret's value
  for (const text of answers) expect(text).not.toContain(SECRET);
  await h?.close();
});

describe("layers and the effective configuration", () => {
  it("creates the organization default with a secret sealed at rest and answered by name only", async () => {
    const res = await api("POST", "/api/v1/config-layers", {
      name: "defaults", kind: "organization",
      variables: { LOG_LEVEL: "info", MQTT_URL: "mqtts://{{ device.labels.site }}.broker.example:8883", BROKER_USER: "fleet" },
      secrets: { BROKER_PASSWORD: SECRET },
      files: [{ path: "/etc/fleet/mqtt.conf", content: "url={{ vars.MQTT_URL }}\nuser={{ vars.BROKER_USER }}\n", mode: "640", owner: "root:mosquitto" }],
      activation: { command: ["systemctl", "reload", "mosquitto"] },
      comment: "first cut",
    });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({
      name: "defaults", kind: "organization", selector: null, order: null, revision: 1, secretNames: ["BROKER_PASSWORD"], variableCount: 3, fileCount: 1,
      content: {
        revision: 1, comment: "first cut", restoredFrom: null, activation: { command: ["systemctl", "reload", "mosquitto"] },
        files: [{ path: "/etc/fleet/mqtt.conf", mode: "0640", owner: "root:mosquitto", template: true, binary: false, content: "url={{ vars.MQTT_URL }}\nuser={{ vars.BROKER_USER }}\n" }],
      },
    });
    orgLayer = res.body.id;
    const stored = await h.services.prisma.configLayerRevision.findFirstOrThrow({ where: { layerId: orgLayer } });
    expect(stored.secretsSealed).toMatch(/^v1:/);
    expect(JSON.stringify(stored)).not.toContain(SECRET);
    expect(JSON.parse(h.services.secrets.decrypt(stored.secretsSealed!))).toEqual({ BROKER_PASSWORD: SECRET });
    const audit = await h.services.prisma.auditEntry.findFirst({ where: { action: "config-layers.create", entityId: orgLayer } });
    expect(audit?.message).toBe("organization layer defaults created (revision 1, secrets BROKER_PASSWORD)");
    expect(JSON.stringify(audit?.changes)).not.toContain(SECRET);
  });

  it("adds selector layers at orders and a device override; the effective view names each value's layer and what it overrode", async () => {
    const berlin = await api("POST", "/api/v1/config-layers", {
      name: "site-berlin", kind: "selector", selector: { site: "berlin" }, order: 10,
      variables: { LOG_LEVEL: "warn", NTP: "ntp.berlin.example" },
      files: [{ path: "/etc/fleet/logo.bin", contentBase64: Buffer.from([0, 1, 2, 255]).toString("base64"), mode: "0600" }],
    });
    expect(berlin.status, berlin.text).toBe(201);
    berlinLayer = berlin.body.id;
    const pilot = await api("POST", "/api/v1/config-layers", { name: "pilot", kind: "selector", selector: { tier: "pilot" }, order: 20, variables: { LOG_LEVEL: "debug" } });
    expect(pilot.status, pilot.text).toBe(201);
    pilotLayer = pilot.body.id;
    const own = await api("POST", "/api/v1/config-layers", {
      name: "dev-0-override", kind: "device", deviceId: devices[0].deviceId,
      variables: { NTP: "ntp.{{ device.name }}.local", ARCH_NOTE: "runs {{ device.facts.arch }}" },
    });
    expect(own.status, own.text).toBe(201);
    expect(own.body).toMatchObject({ kind: "device", deviceId: devices[0].deviceId, deviceName: "dev-0" });

    const res = await api("GET", `/api/v1/config-layers/effective?deviceId=${devices[0].deviceId}`);
    expect(res.status, res.text).toBe(200);
    const view = res.body;
    expect(view.layers.map((l: { layer: string }) => l.layer)).toEqual(["defaults", "site-berlin", "pilot", "dev-0-override"]);
    const byName = Object.fromEntries(view.variables.map((v: { name: string }) => [v.name, v]));
    expect(byName.LOG_LEVEL).toMatchObject({
      value: "debug", layer: "pilot", layerId: pilotLayer, revision: 1, secret: false,
      overrode: [{ layer: "site-berlin", layerId: berlinLayer, revision: 1 }, { layer: "defaults", layerId: orgLayer, revision: 1 }],
    });
    expect(byName.NTP).toMatchObject({ value: "ntp.dev-0.local", layer: "dev-0-override", overrode: [{ layer: "site-berlin" }] });
    expect(byName.ARCH_NOTE.value).toBe("runs arm64");
    expect(byName.MQTT_URL).toMatchObject({ value: "mqtts://berlin.broker.example:8883", layer: "defaults", overrode: [] });
    expect(byName.BROKER_PASSWORD).toEqual({ name: "BROKER_PASSWORD", value: null, secret: true, layer: "defaults", layerId: orgLayer, revision: 1, overrode: [] });
    expect(view.files).toEqual([
      expect.objectContaining({ path: "/etc/fleet/logo.bin", binary: true, content: null, sizeBytes: 4, layer: "site-berlin", mode: "0600", owner: null }),
      expect.objectContaining({
        path: "/etc/fleet/mqtt.conf", binary: false, secret: false, layer: "defaults", owner: "root:mosquitto",
        content: "url=mqtts://berlin.broker.example:8883\nuser=fleet\n",
        sha256: createHash("sha256").update("url=mqtts://berlin.broker.example:8883\nuser=fleet\n").digest("hex"),
      }),
    ]);
    expect(view.activations).toEqual([{ layer: "defaults", command: ["systemctl", "reload", "mosquitto"], paths: ["/etc/fleet/mqtt.conf"] }]);
    expect(view.revision).toMatch(/^[0-9a-f]{64}$/);
    expect(view).toMatchObject({ reported: null, inSync: false, deviceName: "dev-0" });

    // munich: only the default, and a different revision
    const munich = await api("GET", `/api/v1/config-layers/effective?deviceId=${devices[2].deviceId}`);
    expect(munich.body.layers.map((l: { layer: string }) => l.layer)).toEqual(["defaults"]);
    expect(munich.body.variables.find((v: { name: string }) => v.name === "MQTT_URL").value).toBe("mqtts://munich.broker.example:8883");
    expect(munich.body.revision).not.toBe(view.revision);
  });

  it("lists layers, secrets by name only; the preview gives each matching device's revision", async () => {
    const list = await api("GET", "/api/v1/config-layers?kind=selector");
    expect(list.status).toBe(200);
    expect(list.body).toMatchObject({ total: 2, hasMore: false });
    expect(list.body.items.map((l: { name: string }) => l.name)).toEqual(["site-berlin", "pilot"]);
    const preview = await api("GET", "/api/v1/config-layers/preview?labels=site=berlin");
    expect(preview.status, preview.text).toBe(200);
    expect(preview.body.total).toBe(2);
    const effective0 = (await api("GET", `/api/v1/config-layers/effective?deviceId=${devices[0].deviceId}`)).body.revision;
    expect(preview.body.items).toEqual([
      { deviceId: devices[0].deviceId, deviceName: "dev-0", revision: effective0, error: null, appliedRevision: null },
      expect.objectContaining({ deviceId: devices[1].deviceId, deviceName: "dev-1", error: null }),
    ]);
  });

  it("a change is a new revision; rolling back to revision 1 is one action and gives the first configuration back", async () => {
    const before = (await api("GET", `/api/v1/config-layers/effective?deviceId=${devices[1].deviceId}`)).body.revision;
    const changed = await api("PATCH", `/api/v1/config-layers/${berlinLayer}`, { variables: { LOG_LEVEL: "error", NTP: "ntp2.berlin.example" }, comment: "new NTP" });
    expect(changed.status, changed.text).toBe(200);
    expect(changed.body).toMatchObject({ revision: 2, content: { revision: 2, comment: "new NTP", variables: { LOG_LEVEL: "error", NTP: "ntp2.berlin.example" } } });
    // files were not given: kept
    expect(changed.body.content.files.map((f: { path: string }) => f.path)).toEqual(["/etc/fleet/logo.bin"]);
    const after = (await api("GET", `/api/v1/config-layers/effective?deviceId=${devices[1].deviceId}`)).body;
    expect(after.revision).not.toBe(before);
    expect(after.variables.find((v: { name: string }) => v.name === "NTP")).toMatchObject({ value: "ntp2.berlin.example", revision: 2 });

    const rolled = await api("POST", `/api/v1/config-layers/${berlinLayer}/rollback`, { revision: 1 });
    expect(rolled.status, rolled.text).toBe(200);
    expect(rolled.body).toMatchObject({ revision: 3, content: { revision: 3, restoredFrom: 1, comment: "rollback to revision 1", variables: { LOG_LEVEL: "warn", NTP: "ntp.berlin.example" } } });
    // same content, same configuration revision
    expect((await api("GET", `/api/v1/config-layers/effective?deviceId=${devices[1].deviceId}`)).body.revision).toBe(before);
    const revisions = await api("GET", `/api/v1/config-layers/${berlinLayer}/revisions`);
    expect(revisions.body.items.map((r: { revision: number }) => r.revision)).toEqual([3, 2, 1]);
    expect((await api("GET", `/api/v1/config-layers/${berlinLayer}/revisions/2`)).body.variables).toEqual({ LOG_LEVEL: "error", NTP: "ntp2.berlin.example" });
    // rolling back to the revision in effect, or to one that does not exist
    expect((await api("POST", `/api/v1/config-layers/${berlinLayer}/rollback`, { revision: 3 })).status).toBe(409);
    const missing = await api("POST", `/api/v1/config-layers/${berlinLayer}/rollback`, { revision: 9 });
    expect(missing.status).toBe(400);
    expect(missing.body.message).toBe('Invalid input: revision: layer "site-berlin" has no revision 9 (1 to 3)');
  });

  it("secrets: set one more and remove none by naming only what changes; the revision's secrets stay sealed, a rollback keeps them", async () => {
    const res = await api("PATCH", `/api/v1/config-layers/${orgLayer}`, { secrets: { API_TOKEN: "tok-xyz-1" } });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ revision: 2, secretNames: ["API_TOKEN", "BROKER_PASSWORD"] });
    expect(res.text).not.toContain("tok-xyz-1");
    const removed = await api("PATCH", `/api/v1/config-layers/${orgLayer}`, { secrets: { API_TOKEN: null } });
    expect(removed.body).toMatchObject({ revision: 3, secretNames: ["BROKER_PASSWORD"] });
    const back = await api("POST", `/api/v1/config-layers/${orgLayer}/rollback`, { revision: 2 });
    expect(back.body).toMatchObject({ revision: 4, secretNames: ["API_TOKEN", "BROKER_PASSWORD"], content: { restoredFrom: 2 } });
    const sealed = await h.services.prisma.configLayerRevision.findMany({ where: { layerId: orgLayer, revision: { in: [2, 4] } }, orderBy: { revision: "asc" } });
    expect(sealed[1].secretsSealed).toBe(sealed[0].secretsSealed);
    expect(JSON.parse(h.services.secrets.decrypt(sealed[1].secretsSealed!))).toEqual({ BROKER_PASSWORD: SECRET, API_TOKEN: "tok-xyz-1" });
    const view = await api("GET", `/api/v1/config-layers/effective?deviceId=${devices[2].deviceId}`);
    expect(view.body.variables.find((v: { name: string }) => v.name === "API_TOKEN")).toMatchObject({ value: null, secret: true, layer: "defaults", revision: 4 });
  });
});

describe("bad input: a 4xx naming the field, nothing stored", () => {
  it("a selector layer at the order of another that can match the same device: 409 naming both", async () => {
    const count = await layerCount();
    const res = await api("POST", "/api/v1/config-layers", { name: "canary", kind: "selector", selector: { tier: "pilot", site: "berlin" }, order: 10, variables: { X: "1" } });
    expect(res.status, res.text).toBe(409);
    expect(res.body.message).toBe('order: layers "canary" and "site-berlin" are both at order 10 and can both match one device (labels {"site":"berlin","tier":"pilot"}): give one of them another order');
    expect(await layerCount()).toBe(count);
    // a selector no device can share with site-berlin's is fine at the same order
    const munich = await api("POST", "/api/v1/config-layers", { name: "site-munich", kind: "selector", selector: { site: "munich" }, order: 10 });
    expect(munich.status, munich.text).toBe(201);
    // moving the pilot layer onto order 10 is refused as well
    const moved = await api("PATCH", `/api/v1/config-layers/${pilotLayer}`, { order: 10 });
    expect(moved.status).toBe(409);
    expect(moved.body.message).toContain('layers "pilot" and "site-berlin" are both at order 10');
    expect((await api("GET", `/api/v1/config-layers/${pilotLayer}`)).body.order).toBe(20);
  });

  it("two such layers that reached the database anyway: the effective view answers 409 naming both", async () => {
    const row = await h.services.prisma.configLayer.create({
      data: { organizationId: acme.org.id, name: "sneaked-in", kind: "selector", selector: { tier: "pilot" }, order: 20, revisions: { create: { organizationId: acme.org.id, revision: 1 } } },
    });
    const res = await api("GET", `/api/v1/config-layers/effective?deviceId=${devices[0].deviceId}`);
    expect(res.status).toBe(409);
    expect(res.body.message).toBe('The configuration of device "dev-0" cannot be computed: layers "pilot" and "sneaked-in" both match this device at order 20: give one of them another order');
    const preview = await api("GET", "/api/v1/config-layers/preview?labels=tier=pilot");
    expect(preview.body.items[0]).toMatchObject({ deviceId: devices[0].deviceId, revision: null, error: expect.stringContaining('"pilot" and "sneaked-in"') });
    await h.services.prisma.configLayer.delete({ where: { id: row.id } });
  });

  it("a template naming a variable no layer defines: 400 naming layer, key and name", async () => {
    const count = await layerCount();
    const res = await api("POST", "/api/v1/config-layers", { name: "typo", kind: "selector", selector: { site: "hamburg" }, order: 5, files: [{ path: "/etc/fleet/a.conf", content: "x={{ vars.MQTT_ULR }}" }] });
    expect(res.status).toBe(400);
    expect(res.body.message).toBe('layer "typo" files[/etc/fleet/a.conf]: {{ vars.MQTT_ULR }} names the variable MQTT_ULR, which no layer defines');
    const syntax = await api("POST", "/api/v1/config-layers", { name: "typo", kind: "selector", selector: { site: "hamburg" }, order: 5, variables: { A: "{{ device.label.site }}" } });
    expect(syntax.status).toBe(400);
    expect(syntax.body.message).toBe('layer "typo" variables.A: "{{ device.label.site }}" is not a reference: use device.name, device.id, device.labels.KEY, device.facts.NAME or vars.NAME');
    // removing a variable another layer's template takes is refused too
    const removal = await api("PATCH", `/api/v1/config-layers/${orgLayer}`, { variables: { LOG_LEVEL: "info", MQTT_URL: "x" } });
    expect(removal.status).toBe(400);
    expect(removal.body.message).toBe('layer "defaults" files[/etc/fleet/mqtt.conf]: {{ vars.BROKER_USER }} names the variable BROKER_USER, which no layer defines');
    expect(await layerCount()).toBe(count);
  });

  it("a template naming a label the device lacks: the effective view answers 409 naming layer, key and label", async () => {
    const res = await api("POST", "/api/v1/config-layers", { name: "rack", kind: "selector", selector: { site: "munich" }, order: 30, variables: { RACK: "rack-{{ device.labels.rack }}" } });
    expect(res.status, res.text).toBe(201);
    const view = await api("GET", `/api/v1/config-layers/effective?deviceId=${devices[2].deviceId}`);
    expect(view.status).toBe(409);
    expect(view.body.message).toBe('The configuration of device "dev-2" cannot be computed: layer "rack" variables.RACK: {{ device.labels.rack }} names the label rack, which this device does not have');
    // its heartbeat gives it no configuration (it keeps what it applied), and the reason is stored
    expect(await beat(devices[2])).not.toHaveProperty("configuration");
    expect(await h.services.prisma.deviceConfigState.findUnique({ where: { deviceId: devices[2].deviceId } })).toMatchObject({
      state: "unrenderable", message: 'layer "rack" variables.RACK: {{ device.labels.rack }} names the label rack, which this device does not have',
    });
    expect((await api("DELETE", `/api/v1/config-layers/${res.body.id}`)).status).toBe(200);
    // renderable again: the stale reason goes with the next heartbeat
    expect((await beat(devices[2])).configuration).toMatchObject({ full: true });
    expect(await h.services.prisma.deviceConfigState.findUnique({ where: { deviceId: devices[2].deviceId } })).toMatchObject({ state: null, message: null });
  });

  it("files: a path that is not absolute, a file over the limit, content and base64 both: 400 naming the file", async () => {
    const count = await layerCount();
    const relative = await api("POST", "/api/v1/config-layers", { name: "bad-files", kind: "device", deviceId: devices[1].deviceId, files: [{ path: "etc/fleet/x.conf", content: "x" }] });
    expect(relative.status).toBe(400);
    expect(relative.body.issues).toEqual([expect.objectContaining({ path: ["files", "0", "path"], message: '"etc/fleet/x.conf" must be absolute (start with /)' })]);
    const dots = await api("POST", "/api/v1/config-layers", { name: "bad-files", kind: "device", deviceId: devices[1].deviceId, files: [{ path: "/etc/fleet/../shadow", content: "x" }] });
    expect(dots.status).toBe(400);
    expect(dots.body.message).toContain('"/etc/fleet/../shadow" must be a normal file path');
    const big = await api("POST", "/api/v1/config-layers", {
      name: "bad-files", kind: "device", deviceId: devices[1].deviceId, files: [{ path: "/etc/fleet/big.bin", contentBase64: Buffer.alloc(131_073).toString("base64") }],
    });
    expect(big.status).toBe(400);
    expect(big.body.issues).toEqual([expect.objectContaining({ path: ["files", "0", "contentBase64"], message: "/etc/fleet/big.bin: 131073 bytes, over the limit of 131072 bytes per file" })]);
    const both = await api("POST", "/api/v1/config-layers", { name: "bad-files", kind: "device", deviceId: devices[1].deviceId, files: [{ path: "/etc/fleet/x", content: "a", contentBase64: b64("a") }] });
    expect(both.status).toBe(400);
    expect(both.body.message).toContain("/etc/fleet/x: give either content (text) or contentBase64 (binary)");
    expect(await layerCount()).toBe(count);
  });

  it("a file outside the allowed roots a device the layer applies to reported: 400 naming the file and the device, nothing stored", async () => {
    // munich's agent reports where it lets configuration be written (its FLEET_AGENT_CONFIG_ROOTS)
    await beat(devices[2], { facts: { configRoots: "/etc/fleet/:/var/lib/fleet-agent/files/" } });
    const count = await layerCount();
    const outside = await api("POST", "/api/v1/config-layers", {
      name: "munich-app", kind: "selector", selector: { site: "munich" }, order: 40,
      files: [{ path: "/etc/fleet/ok.conf", content: "x" }, { path: "/opt/app/app.conf", content: "y" }],
    });
    expect(outside.status, outside.text).toBe(400);
    expect(outside.body.issues).toEqual([expect.objectContaining({
      path: ["files", "1", "path"],
      message: "/opt/app/app.conf is outside the allowed roots of device dev-2: /etc/fleet/, /var/lib/fleet-agent/files/ (the agent's FLEET_AGENT_CONFIG_ROOTS)",
    })]);
    expect(await layerCount()).toBe(count);
    // devices that reported no roots are not judged here (their agent refuses such a file itself)
    const elsewhere = await api("POST", "/api/v1/config-layers", {
      name: "berlin-app", kind: "selector", selector: { site: "berlin", tier: "none" }, order: 41, files: [{ path: "/opt/app/app.conf", content: "y" }],
    });
    expect(elsewhere.status, elsewhere.text).toBe(201);
    // a new selector that would reach munich with that file: 400 naming the selector, nothing changed
    const reach = await api("PATCH", `/api/v1/config-layers/${elsewhere.body.id}`, { selector: { site: "munich" } });
    expect(reach.status, reach.text).toBe(400);
    expect(reach.body.issues).toEqual([expect.objectContaining({ path: ["selector"] })]);
    expect((await api("GET", `/api/v1/config-layers/${elsewhere.body.id}`)).body).toMatchObject({ selector: { site: "berlin", tier: "none" }, revision: 1 });
    expect((await api("DELETE", `/api/v1/config-layers/${elsewhere.body.id}`)).status).toBe(200);
    // inside the roots: taken
    const inside = await api("POST", "/api/v1/config-layers", { name: "munich-app", kind: "selector", selector: { site: "munich" }, order: 40, files: [{ path: "/etc/fleet/app.conf", content: "y" }] });
    expect(inside.status, inside.text).toBe(201);
    expect((await api("DELETE", `/api/v1/config-layers/${inside.body.id}`)).status).toBe(200);
  });

  it("kinds: a second default, a second override, a selector without order, an order on the default", async () => {
    const second = await api("POST", "/api/v1/config-layers", { name: "defaults-2", kind: "organization" });
    expect(second.status).toBe(409);
    expect(second.body.message).toBe('kind: the organization has its default layer already ("defaults")');
    const override = await api("POST", "/api/v1/config-layers", { name: "dev-0-again", kind: "device", deviceId: devices[0].deviceId });
    expect(override.status).toBe(409);
    expect(override.body.message).toBe('deviceId: the device has its override layer already ("dev-0-override")');
    const noOrder = await api("POST", "/api/v1/config-layers", { name: "no-order", kind: "selector", selector: {} });
    expect(noOrder.status).toBe(400);
    expect(noOrder.body.issues).toEqual([expect.objectContaining({ path: ["order"] })]);
    const orderOnDefault = await api("PATCH", `/api/v1/config-layers/${orgLayer}`, { order: 3 });
    expect(orderOnDefault.status).toBe(400);
    expect(orderOnDefault.body.message).toBe("Invalid input: order: only a layer of kind selector has one");
    const name = await api("POST", "/api/v1/config-layers", { name: "pilot", kind: "selector", selector: { x: "y" }, order: 99 });
    expect(name.status).toBe(409);
    expect(name.body.message).toBe('name: a layer named "pilot" exists');
  });
});

describe("tenants and permissions", () => {
  it("another tenant's layers and devices are 404", async () => {
    expect((await api("GET", `/api/v1/config-layers/${orgLayer}`, undefined, globex.key)).status).toBe(404);
    expect((await api("PATCH", `/api/v1/config-layers/${orgLayer}`, { variables: {} }, globex.key)).status).toBe(404);
    expect((await api("POST", `/api/v1/config-layers/${orgLayer}/rollback`, { revision: 1 }, globex.key)).status).toBe(404);
    expect((await api("DELETE", `/api/v1/config-layers/${orgLayer}`, undefined, globex.key)).status).toBe(404);
    expect((await api("GET", `/api/v1/config-layers/effective?deviceId=${devices[0].deviceId}`, undefined, globex.key)).status).toBe(404);
    const foreign = await api("POST", "/api/v1/config-layers", { name: "steal", kind: "device", deviceId: devices[0].deviceId }, globex.key);
    expect(foreign.status).toBe(404);
    expect((await api("GET", "/api/v1/config-layers", undefined, globex.key)).body.total).toBe(0);
    expect((await api("GET", `/api/v1/config-layers/${orgLayer}`)).body.revision).toBe(4);
  });

  it("secures every operation: 401 without credentials, 403 without its permission, 404 for another tenant", async () => {
    const layer = `/api/v1/config-layers/${berlinLayer}`;
    const device = devices[1].deviceId;
    await expectSecured(h, acme, globex, { method: "GET", path: "/api/v1/config-layers", permission: "config:read" });
    await expectSecured(h, acme, globex, { method: "GET", path: layer, permission: "config:read", foreignPath: layer });
    await expectSecured(h, acme, globex, { method: "GET", path: `${layer}/revisions`, permission: "config:read", foreignPath: `${layer}/revisions` });
    await expectSecured(h, acme, globex, { method: "GET", path: `${layer}/revisions/1`, permission: "config:read", foreignPath: `${layer}/revisions/1` });
    await expectSecured(h, acme, globex, { method: "GET", path: `/api/v1/config-layers/effective?deviceId=${device}`, permission: "config:read", foreignPath: `/api/v1/config-layers/effective?deviceId=${device}` });
    await expectSecured(h, acme, globex, { method: "GET", path: "/api/v1/config-layers/preview?labels=site=berlin", permission: "config:read" });
    await expectSecured(h, acme, globex, { method: "POST", path: "/api/v1/config-layers", body: { name: "secured", kind: "selector", selector: { a: "b" }, order: 77 }, permission: "config:write" });
    await expectSecured(h, acme, globex, { method: "PATCH", path: layer, body: { description: "x" }, permission: "config:write", foreignPath: layer });
    await expectSecured(h, acme, globex, { method: "POST", path: `${layer}/rollback`, body: { revision: 1 }, permission: "config:write", foreignPath: `${layer}/rollback` });
    await expectSecured(h, acme, globex, { method: "DELETE", path: layer, permission: "config:write", foreignPath: layer });
    await expectSecured(h, acme, globex, { method: "POST", path: "/api/v1/config-layers/restore", body: { deviceId: device }, permission: "config:write", foreignPath: "/api/v1/config-layers/restore" });
    // nothing of it changed the layer
    expect((await api("GET", layer)).body).toMatchObject({ revision: 3, description: null });
  });

  it("config:read reads and cannot write", async () => {
    const reader = await h.createKey(acme.org.id, ["config:read", "devices:read"]);
    expect((await api("GET", `/api/v1/config-layers/${orgLayer}`, undefined, reader)).status).toBe(200);
    expect((await api("POST", "/api/v1/config-layers", { name: "nope", kind: "selector", selector: {}, order: 1000 }, reader)).status).toBe(403);
    const none = await h.createKey(acme.org.id, ["devices:read"]);
    expect((await api("GET", `/api/v1/config-layers/effective?deviceId=${devices[0].deviceId}`, undefined, none)).status).toBe(403);
  });
});

describe("the heartbeat", () => {
  it("a device of an organization without layers hears no configuration", async () => {
    const [lone] = await enrollFleet(h, globex.key, 1);
    expect(await beat(lone)).not.toHaveProperty("configuration");
  });

  it("gives the full configuration until the device reports it applied, then only the revision; the report is stored", async () => {
    const device = devices[1];
    const view = (await api("GET", `/api/v1/config-layers/effective?deviceId=${device.deviceId}`)).body;
    const first = (await beat(device)).configuration!;
    expect(first).toMatchObject({ revision: view.revision, full: true });
    const files = first.files as Array<{ path: string; contentBase64: string; sha256: string; mode: string; owner?: string; layer: string }>;
    expect(files.map((f) => f.path)).toEqual(["/etc/fleet/logo.bin", "/etc/fleet/mqtt.conf"]);
    const mqtt = files[1];
    expect(Buffer.from(mqtt.contentBase64, "base64").toString()).toBe("url=mqtts://berlin.broker.example:8883\nuser=fleet\n");
    expect(mqtt).toMatchObject({ mode: "0640", owner: "root:mosquitto", layer: "defaults", sha256: createHash("sha256").update(Buffer.from(mqtt.contentBase64, "base64")).digest("hex") });
    expect(Buffer.from(files[0].contentBase64, "base64")).toEqual(Buffer.from([0, 1, 2, 255]));
    // secrets reach the device as plain values
    expect(first.vars).toMatchObject({ BROKER_PASSWORD: SECRET, LOG_LEVEL: "warn", NTP: "ntp.berlin.example" });
    expect(first.activations).toEqual([{ layer: "defaults", command: ["systemctl", "reload", "mosquitto"], paths: ["/etc/fleet/mqtt.conf"] }]);
    // not applied yet: full again
    expect((await beat(device)).configuration).toMatchObject({ full: true });

    const second = await beat(device, { configuration: { revision: view.revision, state: "applied", appliedRevision: view.revision } });
    expect(second.configuration).toEqual({ revision: view.revision, full: false });
    expect((await beat(device)).configuration).toEqual({ revision: view.revision, full: false });
    const state = await h.services.prisma.deviceConfigState.findUniqueOrThrow({ where: { deviceId: device.deviceId } });
    expect(state).toMatchObject({ revision: view.revision, state: "applied", appliedRevision: view.revision, drift: [] });

    // drift reported: stored and shown
    const drifted = createHash("sha256").update("edited by hand").digest("hex");
    await beat(device, { configuration: { revision: view.revision, state: "applied", appliedRevision: view.revision, drift: [{ path: "/etc/fleet/mqtt.conf", sha256: drifted }] } });
    const after = (await api("GET", `/api/v1/config-layers/effective?deviceId=${device.deviceId}`)).body;
    expect(after).toMatchObject({ inSync: true, reported: { state: "applied", appliedRevision: view.revision, drift: [{ path: "/etc/fleet/mqtt.conf", sha256: drifted }] } });

    // restore: the next answer is full with restore: true, once; a device without drift has nothing to restore
    const restore = await api("POST", "/api/v1/config-layers/restore", { deviceId: device.deviceId });
    expect(restore.status, restore.text).toBe(200);
    expect(restore.body).toEqual({ deviceId: device.deviceId, paths: ["/etc/fleet/mqtt.conf"] });
    expect((await h.services.prisma.auditEntry.findFirst({ where: { action: "config-layers.restore", entityId: device.deviceId } }))?.message).toBe("restore /etc/fleet/mqtt.conf");
    const restoring = (await beat(device)).configuration!;
    expect(restoring).toMatchObject({ revision: view.revision, full: true, restore: true });
    expect((restoring.files as unknown[]).length).toBe(2);
    await beat(device, { configuration: { revision: view.revision, state: "applied", appliedRevision: view.revision, drift: [] } });
    expect((await beat(device)).configuration).toEqual({ revision: view.revision, full: false });
    const nothing = await api("POST", "/api/v1/config-layers/restore", { deviceId: device.deviceId });
    expect(nothing.status).toBe(409);
    expect(nothing.body.message).toBe('Device "dev-1" reported no files changed by hand: nothing to restore');
    expect((await api("POST", "/api/v1/config-layers/restore", { deviceId: device.deviceId }, globex.key)).status).toBe(404);

    // a layer change: full again with the new revision; a failed report keeps the applied one
    expect((await api("PATCH", `/api/v1/config-layers/${orgLayer}`, { variables: { LOG_LEVEL: "info", MQTT_URL: "mqtts://{{ device.labels.site }}.broker.example:8883", BROKER_USER: "fleet2" } })).status).toBe(200);
    const third = (await beat(device)).configuration!;
    expect(third.full).toBe(true);
    expect(third.revision).not.toBe(view.revision);
    await beat(device, { configuration: { revision: third.revision, state: "failed", message: "/etc/fleet/mqtt.conf: outside the allowed roots", appliedRevision: view.revision } });
    const failed = (await api("GET", `/api/v1/config-layers/effective?deviceId=${device.deviceId}`)).body;
    expect(failed).toMatchObject({ inSync: false, reported: { revision: third.revision, state: "failed", message: "/etc/fleet/mqtt.conf: outside the allowed roots", appliedRevision: view.revision } });
  });

  it("a bad report is a 400 naming the field", async () => {
    const res = await heartbeat(h, devices[1], { configuration: { revision: "nope", state: "applied" } });
    expect(res.status).toBe(400);
    expect(res.body.issues).toEqual([expect.objectContaining({ path: ["configuration", "revision"], message: "a sha256 hex" })]);
  });

  it("deployment parameters take the device's variables: rendered per device, with a hash that follows them", async () => {
    const appId = await importVersion(h, acme.org.id, {
      version: "1.0.0",
      appKey: "broker-client",
      parametersYaml: "  brokerUrl:\n    schema: { type: string }\n    targets: [{ pointer: BROKER_URL, components: [gateway] }]\n",
    });
    const created = await api("POST", "/api/v1/deployments", {
      name: "broker-client", applicationId: appId, version: "1.0.0", profileId: "compose-main",
      parameters: { brokerUrl: "{{ vars.MQTT_URL }}/{{ vars.NTP }}" }, target: { deviceIds: [devices[1].deviceId, devices[2].deviceId] }, strategy: { type: "all-at-once" },
    });
    expect(created.status, created.text).toBe(201);
    expect((await api("POST", `/api/v1/deployments/${created.body.id}/start`)).status).toBe(200);
    const berlin = (await beat(devices[1])).deployments[0];
    expect(berlin.parameters.gateway.BROKER_URL).toBe("mqtts://berlin.broker.example:8883/ntp.berlin.example");
    expect(berlin.parametersHash).toBe(createHash("sha256").update(JSON.stringify({ gateway: { BROKER_URL: "mqtts://berlin.broker.example:8883/ntp.berlin.example" } })).digest("hex"));
    // munich has no NTP variable: that expression stays as written, the rest is rendered
    const munich = (await beat(devices[2])).deployments[0];
    expect(munich.parameters.gateway.BROKER_URL).toBe("mqtts://munich.broker.example:8883/{{ vars.NTP }}");
    // a variable changes: so do the parameters and their hash
    expect((await api("PATCH", `/api/v1/config-layers/${berlinLayer}`, { variables: { LOG_LEVEL: "warn", NTP: "ntp3.berlin.example" } })).status).toBe(200);
    const changed = (await beat(devices[1])).deployments[0];
    expect(changed.parameters.gateway.BROKER_URL).toBe("mqtts://berlin.broker.example:8883/ntp3.berlin.example");
    expect(changed.parametersHash).not.toBe(berlin.parametersHash);
  });
});
