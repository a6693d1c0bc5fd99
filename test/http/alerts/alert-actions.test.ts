// What a person does with alerts (the console's Alerts area) through HTTP: acknowledge and
// resolve a firing alert (who and when, stored; 409 once resolved; another tenant's is a 404;
// a viewer is refused), firing anew clears the acknowledgement; a notification target's own
// test notification reaches a signing-checking receiver and shows in the target's delivery
// history with its attempts.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { startWebhookReceiver, type WebhookReceiver } from "../../support/webhook-receiver.js";
import { JobRunner } from "../../../src/jobs/runner.js";
import { deliveryJob } from "../../../src/modules/notification-targets/deliveries.js";
import { evaluateRulesOnce } from "../../../src/modules/alerts/evaluate.js";
import { enrolledDevices, sendTelemetry, type EnrolledDevice } from "../telemetry/support.js";

let h: Harness;
let acme: Tenant;
let globex: Tenant;
let receiver: WebhookReceiver;
let runner: JobRunner;
let device: EnrolledDevice;
let ruleId: string;

const cpu = (value: number) => [{ timestamp: new Date().toISOString(), cpuUsagePercent: value }];

beforeAll(async () => {
  receiver = await startWebhookReceiver();
  h = await createHarness({ NOTIFICATION_RETRY_BASE_MS: "100", NOTIFICATION_MAX_ATTEMPTS: "3" });
  acme = await h.createTenant("Acme Alert Actions");
  globex = await h.createTenant("Globex Alert Actions");
  [device] = await enrolledDevices(h, acme, 1, { site: "oslo" });
  const rule = await h.api("POST", "/api/v1/alert-rules", {
    key: acme.key,
    body: { name: "hot cpu", severity: "critical", labelSelector: { site: "oslo" }, condition: { type: "metric_threshold", metric: "cpuUsagePercent", operator: ">", threshold: 90 } },
  });
  expect(rule.status, rule.text).toBe(201);
  ruleId = rule.body.id;
  runner = new JobRunner(h.services, { definitions: [deliveryJob(h.services.config)], pollIntervalMs: 50, concurrency: 2 });
  runner.start();
});
afterAll(async () => {
  await runner?.stop();
  await h?.close();
  await receiver?.close();
});

async function fire() {
  expect((await sendTelemetry(h, device, cpu(97))).status).toBe(200);
  expect((await evaluateRulesOnce(h.services, { organizationId: acme.org.id })).fired).toBe(1);
}

describe("acknowledge and resolve", () => {
  it("acknowledges a firing alert: who and when, still firing", async () => {
    await fire();
    const key = { ruleId, deviceId: device.deviceId };
    const viewer = await h.createKey(acme.org.id, ["*"], { role: "viewer" });
    expect((await h.api("POST", "/api/v1/alerts/acknowledge", { key: viewer, body: key })).status).toBe(403);
    expect((await h.api("POST", "/api/v1/alerts/acknowledge", { key: globex.key, body: key })).status).toBe(404);
    const bad = await h.api("POST", "/api/v1/alerts/acknowledge", { key: acme.key, body: { ruleId, deviceId: "nope" } });
    expect(bad.status).toBe(400);
    expect(bad.text).toContain("deviceId");

    const ack = await h.api("POST", "/api/v1/alerts/acknowledge", { key: acme.key, body: key });
    expect(ack.status, ack.text).toBe(200);
    expect(ack.body).toMatchObject({ ruleId, deviceId: device.deviceId, state: "firing", acknowledgedBy: acme.user.email, resolvedBy: null });
    expect(Date.parse(ack.body.acknowledgedAt)).toBeGreaterThan(Date.now() - 60_000);
    const listed = await h.api("GET", `/api/v1/alerts?state=firing&ruleId=${ruleId}`, { key: acme.key });
    expect(listed.body.items).toEqual([ack.body]);
  });

  it("resolves it by hand: resolved with who, 409 the second time, fires anew without the acknowledgement", async () => {
    const key = { ruleId, deviceId: device.deviceId };
    const resolved = await h.api("POST", "/api/v1/alerts/resolve", { key: acme.key, body: key });
    expect(resolved.status, resolved.text).toBe(200);
    expect(resolved.body).toMatchObject({ state: "resolved", resolvedBy: acme.user.email });
    expect((await h.api("GET", `/api/v1/alerts?state=firing&ruleId=${ruleId}`, { key: acme.key })).body.total).toBe(0);
    expect((await h.api("GET", `/api/v1/alerts?state=resolved&ruleId=${ruleId}`, { key: acme.key })).body.items).toEqual([resolved.body]);
    const again = await h.api("POST", "/api/v1/alerts/resolve", { key: acme.key, body: key });
    expect(again.status).toBe(409);
    expect((await h.api("POST", "/api/v1/alerts/acknowledge", { key: acme.key, body: key })).status).toBe(409);

    // The condition still holds: the next evaluation fires a new alert, not acknowledged.
    await fire();
    const firing = await h.api("GET", `/api/v1/alerts?state=firing&ruleId=${ruleId}`, { key: acme.key });
    expect(firing.body.items).toHaveLength(1);
    expect(firing.body.items[0]).toMatchObject({ state: "firing", acknowledgedAt: null, acknowledgedBy: null, resolvedBy: null, resolvedAt: null });
  });
});

describe("a notification target's test and delivery history", () => {
  it("sends a signed test to the target alone and lists it with its attempts", async () => {
    const created = await h.api("POST", "/api/v1/notification-targets", { key: acme.key, body: { name: "pager hook", type: "webhook", url: `${receiver.url}/pager` } });
    expect(created.status, created.text).toBe(201);
    receiver.setSecret(created.body.secret);
    receiver.respondWith([500, 200]);
    const before = receiver.requests.length;

    expect((await h.api("POST", `/api/v1/notification-targets/${created.body.id}/test`, { key: globex.key })).status).toBe(404);
    const test = await h.api("POST", `/api/v1/notification-targets/${created.body.id}/test`, { key: acme.key });
    expect(test.status, test.text).toBe(202);
    expect(test.body).toMatchObject({ targetId: created.body.id, targetName: "pager hook", status: "pending" });

    const received = (await receiver.waitFor(before + 2, 20_000)).slice(before);
    for (const r of received) {
      expect(r.path).toBe("/pager");
      expect(r.signatureValid).toBe(true);
      expect(r.json).toMatchObject({ event: "alert.test", deliveryId: test.body.id, rule: { id: null, name: "Test of pager hook" } });
    }

    let history;
    for (const deadline = Date.now() + 20_000; ; await new Promise((r) => setTimeout(r, 100))) {
      history = await h.api("GET", `/api/v1/notification-targets/${created.body.id}/deliveries`, { key: acme.key });
      if (history.body.items[0]?.status === "delivered" || Date.now() > deadline) break;
    }
    expect(history.status).toBe(200);
    expect(history.body.total).toBe(1);
    expect(history.body.items[0]).toMatchObject({ id: test.body.id, event: "test", ruleId: null, status: "delivered", attempts: 2, lastStatusCode: 200 });
    expect(history.body.items[0].attemptLog.map((a: { statusCode: number; success: boolean }) => [a.statusCode, a.success])).toEqual([[500, false], [200, true]]);
    expect((await h.api("GET", `/api/v1/notification-targets/${created.body.id}/deliveries`, { key: globex.key })).status).toBe(404);

    const disabled = await h.api("PATCH", `/api/v1/notification-targets/${created.body.id}`, { key: acme.key, body: { enabled: false } });
    expect(disabled.status).toBe(200);
    const refused = await h.api("POST", `/api/v1/notification-targets/${created.body.id}/test`, { key: acme.key });
    expect(refused.status).toBe(409);
    expect(refused.text).toContain("disabled");
  });
});
