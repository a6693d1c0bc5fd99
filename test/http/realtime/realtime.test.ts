// The realtime channel through HTTP: tickets, the WebSocket read by a real `ws` client, events
// of the caller's organization only, channels by permission, used and expired tickets refused;
// on PostgreSQL also an event published in one process reaching a client of another.
import crypto from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectRealtime, type RealtimeClient } from "../../support/realtime-client.js";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { expectSecured } from "../../support/security.js";
import { eventBusOf } from "../../../src/lib/events.js";
import { sha256Hex } from "../../../src/lib/crypto.js";
import { heartbeat } from "../agent/fleet-support.js";
import { enrolledDevices, type EnrolledDevice } from "../telemetry/support.js";
import { onPostgres, startSecondProcess } from "./second-process.js";

let h: Harness;
let acme: Tenant;
let globex: Tenant;
let device: EnrolledDevice;

beforeAll(async () => {
  h = await createHarness();
  acme = await h.createTenant("Acme Realtime");
  globex = await h.createTenant("Globex Realtime");
  [device] = await enrolledDevices(h, acme, 1);
});
afterAll(() => h?.close());

async function ticket(key: string) {
  const res = await h.api("POST", "/api/v1/realtime/ticket", { key });
  expect(res.status, res.text).toBe(201);
  return res.body as { ticket: string; expiresAt: string; channels: string[]; url: string };
}

const connect = connectRealtime;
type Client = RealtimeClient;

const statusEvent = (organizationId: string, deviceId: string, to: "online" | "offline" = "online") => ({
  organizationId, deviceId, from: null, to, at: new Date().toISOString(),
});

describe("POST /api/v1/realtime/ticket", () => {
  it("answers a short-lived single-use ticket with the channels the caller may receive", async () => {
    const t = await ticket(acme.key);
    expect(t.ticket).toMatch(/^rt_[A-Za-z0-9]{40}$/);
    expect(t.channels).toEqual(["devices", "deployments", "alerts"]);
    expect(t.url).toBe(`/api/v1/realtime?ticket=${t.ticket}`);
    const ttl = Date.parse(t.expiresAt) - Date.now();
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(30_000);
    // stored as its hash only
    const row = await h.services.prisma.realtimeTicket.findUnique({ where: { tokenHash: sha256Hex(t.ticket) } });
    expect(row?.organizationId).toBe(acme.org.id);
    expect(JSON.stringify(row)).not.toContain(t.ticket);
  });

  it("writes no audit entry: a ticket is no change made by a person (every console page load asks for one)", async () => {
    const entries = () => h.services.prisma.auditEntry.count({ where: { organizationId: acme.org.id } });
    const before = await entries();
    for (let i = 0; i < 3; i++) await ticket(acme.key);
    expect(await entries()).toBe(before);
    const listed = await h.api("GET", "/api/v1/audit?action=realtime.*", { key: acme.key });
    expect(listed.status, listed.text).toBe(200);
    expect(listed.body.total).toBe(0);
  });

  it("is secured, and needs at least one readable channel", async () => {
    await expectSecured(h, acme, globex, { method: "POST", path: "/api/v1/realtime/ticket", permission: "telemetry:read" });
    const onlyTelemetry = await h.createKey(acme.org.id, ["telemetry:read"]);
    expect((await h.api("POST", "/api/v1/realtime/ticket", { key: onlyTelemetry })).status).toBe(403);
  });
});

describe("GET /api/v1/realtime (WebSocket)", () => {
  it("carries device status changes of the caller's organization only", async () => {
    const client = await connect(h.url, (await ticket(acme.key)).ticket);
    if ("refused" in client) throw new Error(`refused ${client.refused}`);
    const bus = eventBusOf(h.services);
    bus.publish("device.status_changed", statusEvent(globex.org.id, device.deviceId)); // another tenant's: never delivered
    // a real transition: the device's first heartbeat takes it from provisioned to online
    expect((await heartbeat(h, device)).status).toBe(200);
    const message = await client.next((m) => m.type === "device.status_changed");
    expect(message).toMatchObject({ type: "device.status_changed", channel: "devices", data: { organizationId: acme.org.id, deviceId: device.deviceId, to: "online" } });
    expect(client.messages.filter((m) => m.data?.organizationId === globex.org.id)).toEqual([]);
    client.ws.close();
  });

  it("sends only the channels the ticket's permissions allow", async () => {
    const devicesOnly = await h.createKey(acme.org.id, ["telemetry:read", "devices:read"]);
    const t = await ticket(devicesOnly);
    expect(t.channels).toEqual(["devices"]);
    const client = await connect(h.url, t.ticket);
    if ("refused" in client) throw new Error(`refused ${client.refused}`);
    const bus = eventBusOf(h.services);
    bus.publish("alert.firing", {
      organizationId: acme.org.id, ruleId: crypto.randomUUID(), ruleName: "r", severity: "info", condition: { type: "deployment_failed" },
      summary: "deployment failed", subjectType: "device", subjectId: device.deviceId, subjectName: null, deviceId: device.deviceId, deviceName: null, value: null, at: new Date().toISOString(),
    });
    bus.publish("device.status_changed", statusEvent(acme.org.id, device.deviceId, "offline"));
    const message = await client.next((m) => m.type !== "ready");
    expect(message.type).toBe("device.status_changed"); // the alert before it was not sent
    client.ws.close();
  });

  it("refuses a used ticket, an expired ticket and an unknown one", async () => {
    const t = await ticket(acme.key);
    const first = await connect(h.url, t.ticket);
    expect("refused" in first).toBe(false);
    (first as Client).ws.close();
    expect(await connect(h.url, t.ticket)).toEqual({ refused: 401 });

    const expired = await ticket(acme.key);
    await h.services.prisma.realtimeTicket.update({ where: { tokenHash: sha256Hex(expired.ticket) }, data: { expiresAt: new Date(Date.now() - 1000) } });
    expect(await connect(h.url, expired.ticket)).toEqual({ refused: 401 });
    expect(await connect(h.url, "rt_" + "x".repeat(40))).toEqual({ refused: 401 });
    expect(await connect(h.url, "")).toEqual({ refused: 401 });
  });

  it("tells a plain GET to upgrade", async () => {
    const res = await h.api("GET", "/api/v1/realtime?ticket=whatever", { key: null });
    expect(res.status).toBe(426);
    expect(res.body.code).toBe("UPGRADE_REQUIRED");
  });

  it.runIf(process.env.DATABASE_URL)("delivers an event published in another server process (PostgreSQL LISTEN/NOTIFY)", async () => {
    expect(onPostgres(h)).toBe(true);
    const second = await startSecondProcess(h);
    try {
      // the ticket comes from the first process and is accepted by the second: it lives in the database
      const client = await connect(second.url, (await ticket(acme.key)).ticket);
      if ("refused" in client) throw new Error(`refused ${client.refused}`);
      eventBusOf(h.services).publish("device.status_changed", statusEvent(acme.org.id, device.deviceId, "offline"));
      const message = await client.next((m) => m.type === "device.status_changed");
      expect(message.data).toMatchObject({ deviceId: device.deviceId, to: "offline" });
      client.ws.close();
    } finally {
      await second.close();
    }
  });
});
