// Alert rules through HTTP: CRUD and validation, then rules that fire and resolve from
// telemetry sent through the agent protocol, with notifications delivered by the job runner
// to a signing-checking webhook receiver, the cooldown, alert events on the realtime
// WebSocket, the other conditions (offline, certificate expiring, deployment failed) and the
// fleet health summary's count of firing alerts.
import crypto from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { expectSecured } from "../../support/security.js";
import { startWebhookReceiver, type WebhookReceiver } from "../../support/webhook-receiver.js";
import { JobRunner } from "../../../src/jobs/runner.js";
import { jobCatalog } from "../../../src/jobs/catalog.js";
import { deliveryJob } from "../../../src/modules/notification-targets/deliveries.js";
import { evaluateRulesOnce } from "../../../src/modules/alerts/evaluate.js";
import { insertDevices } from "../agent/fleet-support.js";
import { enrolledDevices, issuePaths, sendTelemetry, type EnrolledDevice } from "../telemetry/support.js";

let h: Harness;
let acme: Tenant;
let globex: Tenant;
let receiver: WebhookReceiver;
let runner: JobRunner;
let hook: { id: string; secret: string };
let berlin1: EnrolledDevice;
let berlin2: EnrolledDevice;
let paris: EnrolledDevice;

beforeAll(async () => {
  receiver = await startWebhookReceiver();
  h = await createHarness({ NOTIFICATION_RETRY_BASE_MS: "100", NOTIFICATION_MAX_ATTEMPTS: "3" });
  acme = await h.createTenant("Acme Alerts");
  globex = await h.createTenant("Globex Alerts");
  [berlin1, berlin2] = await enrolledDevices(h, acme, 2, { site: "berlin" });
  [paris] = await enrolledDevices(h, acme, 1, { site: "paris" });
  const created = await h.api("POST", "/api/v1/notification-targets", { key: acme.key, body: { name: "alerts hook", type: "webhook", url: `${receiver.url}/alerts` } });
  expect(created.status, created.text).toBe(201);
  hook = created.body;
  receiver.setSecret(hook.secret);
  runner = new JobRunner(h.services, { definitions: [deliveryJob(h.services.config)], pollIntervalMs: 50, concurrency: 4 });
  runner.start();
});
afterAll(async () => {
  await runner?.stop();
  await h?.close();
  await receiver?.close();
});

const createRule = (body: Record<string, unknown>, key = acme.key) =>
  h.api("POST", "/api/v1/alert-rules", { key, body: { name: `rule-${crypto.randomBytes(3).toString("hex")}`, ...body } });

const cpuRule = { condition: { type: "metric_threshold", metric: "cpuUsagePercent", operator: ">", threshold: 90, durationSeconds: 300 } };

/** Snapshots every 30 s from `minutesAgo` until now, all with the given CPU. */
const cpuSeries = (minutesAgo: number, cpu: number) =>
  Array.from({ length: minutesAgo * 2 + 1 }, (_, i) => ({ timestamp: new Date(Date.now() - (minutesAgo * 60 - i * 30) * 1000).toISOString(), cpuUsagePercent: cpu }));

const requestsFor = (ruleId: string) => receiver.requests.filter((r) => r.json?.rule?.id === ruleId);

describe("CRUD and validation", () => {
  it("creates a rule with defaults and a readable summary", async () => {
    const res = await createRule({ ...cpuRule, labelSelector: { site: "berlin" }, targetIds: [hook.id] });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({
      summary: "cpuUsagePercent > 90 for 5m",
      labelSelector: { site: "berlin" },
      severity: "warning",
      cooldownSeconds: 900,
      enabled: true,
      targetIds: [hook.id],
      firingCount: 0,
      lastEvaluatedAt: null,
      description: null,
    });
    await h.api("DELETE", `/api/v1/alert-rules/${res.body.id}`, { key: acme.key });
  });

  it("refuses an unknown metric, operator or condition type, bad numbers and foreign targets (400)", async () => {
    const foreignTarget = await h.api("POST", "/api/v1/notification-targets", { key: globex.key, body: { name: "theirs", type: "slack", url: receiver.url } });
    for (const [body, path] of [
      [{ condition: { ...cpuRule.condition, metric: "temperature" } }, "condition.metric"],
      [{ condition: { ...cpuRule.condition, operator: "=~" } }, "condition.operator"],
      [{ condition: { type: "sunspots" } }, "condition.type"],
      [{ condition: { ...cpuRule.condition, threshold: "90" } }, "condition.threshold"],
      [{ condition: { ...cpuRule.condition, durationSeconds: -1 } }, "condition.durationSeconds"],
      [{ condition: { type: "certificate_expiring", withinDays: 0 } }, "condition.withinDays"],
      [{ ...cpuRule, severity: "apocalyptic" }, "severity"],
      [{ ...cpuRule, cooldownSeconds: "60" }, "cooldownSeconds"],
      [{ ...cpuRule, labelSelector: { "bad key!": "x" } }, "labelSelector.bad key!"],
      [{}, "condition"],
    ] as const) {
      const res = await createRule(body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(issuePaths(res.body).join(" "), JSON.stringify(body)).toContain(path);
    }
    for (const ids of [[crypto.randomUUID()], [foreignTarget.body.id]]) {
      const res = await createRule({ ...cpuRule, targetIds: ids });
      expect(res.status).toBe(400);
      expect(res.body.message).toMatch(/unknown notification target/);
    }
  });

  it("lists, gets, updates and deletes; names are unique per organization", async () => {
    const a = await createRule({ name: "disk", condition: { type: "metric_threshold", metric: "diskUsagePercent", operator: ">=", threshold: 95 }, severity: "critical" });
    expect(a.body.summary).toBe("diskUsagePercent >= 95");
    expect((await createRule({ name: "disk", ...cpuRule })).status).toBe(409);
    const list = await h.api("GET", "/api/v1/alert-rules?severity=critical", { key: acme.key });
    expect(list.body.items.map((r: { id: string }) => r.id)).toContain(a.body.id);
    expect(list.body.items.every((r: { severity: string }) => r.severity === "critical")).toBe(true);
    const patched = await h.api("PATCH", `/api/v1/alert-rules/${a.body.id}`, {
      key: acme.key,
      body: { enabled: false, targetIds: [hook.id], condition: { type: "device_offline", durationSeconds: 600 }, description: "when devices vanish" },
    });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.body).toMatchObject({ enabled: false, targetIds: [hook.id], summary: "device offline for 10m", description: "when devices vanish", name: "disk" });
    expect((await h.api("GET", "/api/v1/alert-rules?enabled=false", { key: acme.key })).body.items.map((r: { id: string }) => r.id)).toContain(a.body.id);
    expect((await h.api("GET", `/api/v1/alert-rules/${a.body.id}`, { key: globex.key })).status).toBe(404);
    expect((await h.api("PATCH", `/api/v1/alert-rules/${a.body.id}`, { key: globex.key, body: { enabled: true } })).status).toBe(404);
    expect((await h.api("DELETE", `/api/v1/alert-rules/${a.body.id}`, { key: acme.key })).body).toEqual({ id: a.body.id, deleted: true });
    expect((await h.api("GET", `/api/v1/alert-rules/${a.body.id}`, { key: acme.key })).status).toBe(404);
  });

  it("answers 409 for a test notification without targets", async () => {
    const rule = await createRule(cpuRule);
    expect((await h.api("POST", `/api/v1/alert-rules/${rule.body.id}/test`, { key: acme.key })).status).toBe(409);
    await h.api("DELETE", `/api/v1/alert-rules/${rule.body.id}`, { key: acme.key });
  });

  it("is secured on every operation", async () => {
    const rule = await createRule({ ...cpuRule, targetIds: [hook.id] });
    const item = `/api/v1/alert-rules/${rule.body.id}`;
    await expectSecured(h, acme, globex, { method: "GET", path: "/api/v1/alert-rules", permission: "alerts:read" });
    await expectSecured(h, acme, globex, { method: "POST", path: "/api/v1/alert-rules", permission: "alerts:write", body: { name: "sec", ...cpuRule } });
    await expectSecured(h, acme, globex, { method: "GET", path: item, permission: "alerts:read", foreignPath: item });
    await expectSecured(h, acme, globex, { method: "PATCH", path: item, permission: "alerts:write", foreignPath: item, body: { severity: "info" } });
    await expectSecured(h, acme, globex, { method: "GET", path: `${item}/deliveries`, permission: "alerts:read", foreignPath: `${item}/deliveries` });
    await expectSecured(h, acme, globex, { method: "POST", path: `${item}/test`, permission: "alerts:write", foreignPath: `${item}/test` });
    await expectSecured(h, acme, globex, { method: "DELETE", path: item, permission: "alerts:write", foreignPath: item });
    await expectSecured(h, acme, globex, { method: "GET", path: "/api/v1/fleet/health", permission: "telemetry:read" });
  });
});

describe("evaluation", () => {
  // Rules left by the CRUD tests would fire too: evaluate only the ones made here.
  beforeAll(() => h.services.prisma.alertRule.deleteMany({ where: { organizationId: acme.org.id } }));

  it("is scheduled with the job runner, as are retention and deliveries", () => {
    const catalog = jobCatalog(h.services);
    expect(catalog.schedules.map((s) => s.name)).toEqual(expect.arrayContaining(["alerts.evaluate", "telemetry.retention"]));
    expect(catalog.definitions.map((d) => d.type)).toContain("notification.deliver");
  });

  it("fires and resolves a metric rule from telemetry sent through the agent protocol, notifying the webhook", async () => {
    const rule = (await createRule({ name: "hot berlin", ...cpuRule, labelSelector: { site: "berlin" }, targetIds: [hook.id], severity: "critical" })).body;
    // the realtime channel sees the alert events too
    const ticket = (await h.api("POST", "/api/v1/realtime/ticket", { key: acme.key })).body.ticket;
    const ws = new WebSocket(`${h.url.replace("http", "ws")}/api/v1/realtime?ticket=${ticket}`);
    const wsMessages: any[] = [];
    ws.on("message", (d) => wsMessages.push(JSON.parse(String(d))));
    await new Promise((r) => ws.once("open", r));

    // berlin1: above 90 for six minutes; berlin2: above 90 but only for the last two minutes
    // (does not cover the five); paris: above 90, but outside the selector
    expect((await sendTelemetry(h, berlin1, cpuSeries(6, 95))).status).toBe(200);
    expect((await sendTelemetry(h, berlin2, [...cpuSeries(6, 50).slice(0, 8), ...cpuSeries(2, 97)])).status).toBe(200);
    expect((await sendTelemetry(h, paris, cpuSeries(6, 99))).status).toBe(200);

    const first = await evaluateRulesOnce(h.services, { organizationId: acme.org.id });
    expect(first.fired).toBe(1);
    const got = await h.api("GET", `/api/v1/alert-rules/${rule.id}`, { key: acme.key });
    expect(got.body.firingCount).toBe(1);
    expect(got.body.lastEvaluatedAt).not.toBeNull();
    const states = await h.services.prisma.alertState.findMany({ where: { ruleId: rule.id } });
    expect(states.map((s) => [s.subjectId, s.state, s.value])).toEqual([[berlin1.deviceId, "firing", 95]]);

    // (the runner may deliver before this line runs: wait on the rule's own requests, not a count taken now)
    await expect.poll(() => requestsFor(rule.id).length, { timeout: 10_000 }).toBe(1);
    const [firing] = requestsFor(rule.id);
    expect(firing.signatureValid).toBe(true);
    expect(firing.json).toMatchObject({
      event: "alert.firing",
      rule: { id: rule.id, name: "hot berlin", severity: "critical", summary: "cpuUsagePercent > 90 for 5m" },
      deviceCount: 1,
      devices: [{ id: berlin1.deviceId, value: 95 }],
    });
    expect(firing.json.message).toContain("hot berlin");
    await expect.poll(() => wsMessages.find((m) => m.type === "alert.firing" && m.data.ruleId === rule.id), { timeout: 5000 }).toBeTruthy();
    expect(wsMessages.find((m) => m.type === "alert.firing").data).toMatchObject({ deviceId: berlin1.deviceId, severity: "critical", summary: "cpuUsagePercent > 90 for 5m" });

    // a second evaluation with nothing new changes nothing and sends nothing
    expect((await evaluateRulesOnce(h.services, { organizationId: acme.org.id })).fired).toBe(0);

    // CPU drops: the condition no longer holds for every snapshot of the window
    expect((await sendTelemetry(h, berlin1, [{ timestamp: new Date().toISOString(), cpuUsagePercent: 12 }])).status).toBe(200);
    const second = await evaluateRulesOnce(h.services, { organizationId: acme.org.id });
    expect(second.resolved).toBe(1);
    await expect.poll(() => requestsFor(rule.id).length, { timeout: 10_000 }).toBe(2);
    const resolved = requestsFor(rule.id)[1];
    expect(resolved.signatureValid).toBe(true);
    expect(resolved.json).toMatchObject({ event: "alert.resolved", devices: [{ id: berlin1.deviceId }] });
    await expect.poll(() => wsMessages.some((m) => m.type === "alert.resolved" && m.data.ruleId === rule.id), { timeout: 5000 }).toBe(true);
    ws.close();

    // the delivery history has both, delivered at the first attempt
    await expect.poll(async () => (await h.api("GET", `/api/v1/alert-rules/${rule.id}/deliveries`, { key: acme.key })).body.items.map((d: any) => `${d.event}:${d.status}`), { timeout: 10_000 })
      .toEqual(["resolved:delivered", "firing:delivered"]);
    const history = await h.api("GET", `/api/v1/alert-rules/${rule.id}/deliveries?status=delivered&limit=1`, { key: acme.key });
    expect(history.body).toMatchObject({ total: 2, hasMore: true });
    expect(history.body.items[0]).toMatchObject({ deviceId: berlin1.deviceId, attempts: 1, lastStatusCode: 200, targetId: hook.id });
    expect(history.body.items[0].attemptLog).toEqual([expect.objectContaining({ attempt: 1, statusCode: 200, success: true, error: null })]);
    await h.api("PATCH", `/api/v1/alert-rules/${rule.id}`, { key: acme.key, body: { enabled: false } });
  });

  it("respects the cooldown: a device that fires again soon is not notified again", async () => {
    const rule = (await createRule({
      condition: { type: "metric_threshold", metric: "memoryUsagePercent", operator: ">", threshold: 80 },
      labelSelector: { site: "paris" }, targetIds: [hook.id], cooldownSeconds: 3600,
    })).body;
    const mem = (used: number) => [{ timestamp: new Date().toISOString(), memoryUsedBytes: used, memoryTotalBytes: 100 }];
    const step = async (used: number) => {
      expect((await sendTelemetry(h, paris, mem(used))).status).toBe(200);
      return evaluateRulesOnce(h.services, { organizationId: acme.org.id });
    };
    expect((await step(90)).fired).toBe(1);
    expect((await step(50)).resolved).toBe(1);
    expect((await step(95)).fired).toBe(1); // fires again, within the cooldown
    expect((await step(40)).resolved).toBe(1);
    await expect.poll(async () => (await h.api("GET", `/api/v1/alert-rules/${rule.id}/deliveries`, { key: acme.key })).body.items.map((d: any) => d.event), { timeout: 10_000 })
      .toEqual(["resolved", "firing"]); // only the first firing and its resolution were notified
    await h.api("DELETE", `/api/v1/alert-rules/${rule.id}`, { key: acme.key });
  });

  it("fires for devices offline for the duration, expiring certificates, and accepts deployment failures", async () => {
    const [gone, recent] = await insertDevices(h, acme.org.id, [
      { name: "gone", status: "offline", lastSeenAt: new Date(Date.now() - 3600_000), labels: { site: "lab" } },
      { name: "recent", status: "offline", lastSeenAt: new Date(Date.now() - 60_000), labels: { site: "lab" } },
    ]);
    const offline = (await createRule({ condition: { type: "device_offline", durationSeconds: 600 }, labelSelector: { site: "lab" } })).body;
    const certs = (await createRule({ condition: { type: "certificate_expiring", withinDays: 3650 }, labelSelector: { site: "berlin" } })).body;
    const soonOnly = (await createRule({ condition: { type: "certificate_expiring", withinDays: 1 } })).body;
    const deployments = (await createRule({ condition: { type: "deployment_failed" } })).body;
    await evaluateRulesOnce(h.services, { organizationId: acme.org.id });
    const firing = async (ruleId: string) =>
      (await h.services.prisma.alertState.findMany({ where: { ruleId, state: "firing" } })).map((s) => s.subjectId).sort();
    expect(await firing(offline.id)).toEqual([gone]);
    expect(await firing(certs.id)).toEqual([berlin1.deviceId, berlin2.deviceId].sort());
    expect(await firing(soonOnly.id)).toEqual([]);
    expect(await firing(deployments.id)).toEqual([]);
    const value = (await h.services.prisma.alertState.findFirstOrThrow({ where: { ruleId: offline.id } })).value!;
    expect(value).toBeGreaterThan(3500);
    expect(recent).toBeDefined();

    // fleet health counts firing alerts of enabled rules by severity
    const health = await h.api("GET", "/api/v1/fleet/health", { key: acme.key });
    expect(health.status, health.text).toBe(200);
    expect(health.body.alerts).toEqual({ firing: 3, bySeverity: { info: 0, warning: 3, critical: 0 } });
    for (const r of [offline, certs, soonOnly, deployments]) await h.api("DELETE", `/api/v1/alert-rules/${r.id}`, { key: acme.key });
  });
});
