// Notification targets through HTTP: CRUD with secrets sealed and URLs masked, the outbound
// address policy on both sides, and deliveries to real peers on loopback: a webhook receiver
// that checks signatures and answers 500 before 200 (retries recorded in the history), a
// Slack-compatible receiver and an SMTP server.
import crypto from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { expectSecured } from "../../support/security.js";
import { startWebhookReceiver, type WebhookReceiver } from "../../support/webhook-receiver.js";
import { JobRunner } from "../../../src/jobs/runner.js";
import { deliveryJob } from "../../../src/modules/notification-targets/deliveries.js";
import { issuePaths } from "../telemetry/support.js";
import { startSmtpServer, type SmtpServer } from "../../support/smtp-server.js";

let h: Harness;
let acme: Tenant;
let globex: Tenant;
let receiver: WebhookReceiver;
let smtp: SmtpServer;
let runner: JobRunner;

beforeAll(async () => {
  receiver = await startWebhookReceiver();
  smtp = await startSmtpServer();
  h = await createHarness({ NOTIFICATION_RETRY_BASE_MS: "100", NOTIFICATION_MAX_ATTEMPTS: "3", NOTIFICATION_TIMEOUT_SECONDS: "3", SMTP_URL: smtp.url });
  acme = await h.createTenant("Acme Targets");
  globex = await h.createTenant("Globex Targets");
  runner = new JobRunner(h.services, { definitions: [deliveryJob(h.services.config)], pollIntervalMs: 50, concurrency: 4 });
  runner.start();
});
afterAll(async () => {
  await runner?.stop();
  await h?.close();
  await receiver?.close();
  await smtp?.close();
});

const create = (body: unknown, key = acme.key) => h.api("POST", "/api/v1/notification-targets", { key, body });

async function ruleWithTargets(targetIds: string[]) {
  const res = await h.api("POST", "/api/v1/alert-rules", {
    key: acme.key,
    body: { name: `rule-${crypto.randomBytes(3).toString("hex")}`, condition: { type: "deployment_failed" }, severity: "critical", targetIds },
  });
  expect(res.status, res.text).toBe(201);
  return res.body as { id: string; name: string };
}

async function deliveries(ruleId: string) {
  const res = await h.api("GET", `/api/v1/alert-rules/${ruleId}/deliveries`, { key: acme.key });
  expect(res.status, res.text).toBe(200);
  return res.body.items as any[];
}

async function settled(ruleId: string) {
  await expect.poll(async () => (await deliveries(ruleId)).every((d) => d.status === "delivered" || d.status === "failed"), { timeout: 15_000, interval: 100 }).toBe(true);
  return deliveries(ruleId);
}

describe("CRUD", () => {
  it("creates a webhook target: the generated secret is shown once, URL and secret are sealed at rest", async () => {
    const res = await create({ name: "ops hook", type: "webhook", url: `${receiver.url}/hook?token=abc123` });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({ name: "ops hook", type: "webhook", hasSecret: true, enabled: true, recipients: [] });
    expect(res.body.secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(res.body.url).toBe(`${receiver.url}/hook?…`);
    const read = await h.api("GET", `/api/v1/notification-targets/${res.body.id}`, { key: acme.key });
    expect(read.status).toBe(200);
    expect(read.body.secret).toBeUndefined();
    expect(read.text).not.toContain("abc123");
    const row = await h.services.prisma.notificationTarget.findUniqueOrThrow({ where: { id: res.body.id } });
    expect(row.url).not.toContain("abc123");
    expect(row.secretEncrypted).not.toContain(res.body.secret);
    // the audit entry keeps the masked URL and no secret
    const entry = await h.services.prisma.auditEntry.findFirstOrThrow({ where: { entityId: res.body.id, action: "notificationTargets.create" } });
    expect(JSON.stringify(entry.changes)).not.toContain("abc123");
  });

  it("masks Slack URLs entirely and does not echo a given secret", async () => {
    const slack = await create({ name: "slack", type: "slack", url: "https://hooks.slack.com/services/T000/B000/XXXXSECRET" });
    expect(slack.status, slack.text).toBe(201);
    expect(slack.body.url).toBe("https://hooks.slack.com/…");
    expect(slack.body.hasSecret).toBe(false);
    const given = await create({ name: "given secret", type: "webhook", url: receiver.url, secret: "s".repeat(32) });
    expect(given.body.secret).toBeUndefined();
    expect(given.body.hasSecret).toBe(true);
  });

  it("validates fields by type", async () => {
    for (const [body, field] of [
      [{ name: "x", type: "webhook" }, "url"],
      [{ name: "x", type: "email", recipients: ["a@example.test"], url: "http://example.test" }, "url"],
      [{ name: "x", type: "email" }, "recipients"],
      [{ name: "x", type: "email", recipients: ["not an address"] }, "recipients.0"],
      [{ name: "x", type: "slack", url: "https://example.test", secret: "s".repeat(20) }, "secret"],
      [{ name: "x", type: "webhook", url: "https://example.test", secret: "short" }, "secret"],
      [{ name: "x", type: "pager", url: "https://example.test" }, "type"],
      [{ name: "x", type: "webhook", url: "ftp://example.test/" }, null],
    ] as const) {
      const res = await create(body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      if (field) expect(issuePaths(res.body), JSON.stringify(body)).toContain(field);
    }
  });

  it("lists, updates and deletes; names are unique per organization", async () => {
    const created = await create({ name: "to change", type: "webhook", url: receiver.url });
    expect((await create({ name: "to change", type: "slack", url: receiver.url })).status).toBe(409);
    expect((await create({ name: "to change", type: "webhook", url: receiver.url }, globex.key)).status).toBe(201);
    const list = await h.api("GET", "/api/v1/notification-targets?type=webhook&limit=200", { key: acme.key });
    expect(list.status).toBe(200);
    expect(list.body.items.every((t: { type: string }) => t.type === "webhook")).toBe(true);
    expect(list.body.items.map((t: { id: string }) => t.id)).toContain(created.body.id);

    const id = created.body.id;
    const patched = await h.api("PATCH", `/api/v1/notification-targets/${id}`, { key: acme.key, body: { name: "changed", enabled: false, secret: "n".repeat(24) } });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.body).toMatchObject({ name: "changed", enabled: false, hasSecret: true, type: "webhook" });
    expect((await h.api("PATCH", `/api/v1/notification-targets/${id}`, { key: acme.key, body: { recipients: ["a@example.test"] } })).status).toBe(400);
    expect((await h.api("PATCH", `/api/v1/notification-targets/${id}`, { key: acme.key, body: { enabled: "false" } })).status).toBe(400);

    expect((await h.api("GET", `/api/v1/notification-targets/${id}`, { key: globex.key })).status).toBe(404);
    expect((await h.api("DELETE", `/api/v1/notification-targets/${id}`, { key: globex.key })).status).toBe(404);
    const deleted = await h.api("DELETE", `/api/v1/notification-targets/${id}`, { key: acme.key });
    expect(deleted.body).toEqual({ id, deleted: true });
    expect((await h.api("GET", `/api/v1/notification-targets/${id}`, { key: acme.key })).status).toBe(404);
  });

  it("is secured on every operation", async () => {
    const target = await create({ name: "secured", type: "webhook", url: receiver.url });
    const item = `/api/v1/notification-targets/${target.body.id}`;
    await expectSecured(h, acme, globex, { method: "GET", path: "/api/v1/notification-targets", permission: "alerts:read" });
    await expectSecured(h, acme, globex, { method: "POST", path: "/api/v1/notification-targets", permission: "alerts:write", body: { name: "sec2", type: "slack", url: receiver.url } });
    await expectSecured(h, acme, globex, { method: "GET", path: item, permission: "alerts:read", foreignPath: item });
    await expectSecured(h, acme, globex, { method: "PATCH", path: item, permission: "alerts:write", foreignPath: item, body: { name: "renamed" } });
    await expectSecured(h, acme, globex, { method: "DELETE", path: item, permission: "alerts:write", foreignPath: item });
  });
});

describe("the outbound address policy", () => {
  it("always refuses link-local and cloud metadata addresses; allows loopback and private ranges by default", async () => {
    for (const url of ["http://169.254.169.254/latest/meta-data/", "http://[fe80::1]/", "http://metadata.google.internal/", "http://100.100.100.200/"]) {
      const res = await create({ name: `bad-${crypto.randomBytes(2).toString("hex")}`, type: "webhook", url });
      expect(res.status, url).toBe(400);
      expect(res.body.message, url).toMatch(/refused/);
    }
    for (const url of [receiver.url, "http://10.1.2.3/hook", "http://192.168.1.10/hook"]) {
      expect((await create({ name: `ok-${crypto.randomBytes(2).toString("hex")}`, type: "webhook", url })).status, url).toBe(201);
    }
  });

  it("refuses loopback and private ranges when OUTBOUND_ALLOW_PRIVATE_NETWORKS=false", async () => {
    const shared = await createHarness({ OUTBOUND_ALLOW_PRIVATE_NETWORKS: "false" });
    try {
      for (const url of [receiver.url, "http://10.1.2.3/hook", "http://localhost:9/hook", "http://169.254.169.254/"]) {
        const res = await shared.api("POST", "/api/v1/notification-targets", { body: { name: `p-${crypto.randomBytes(2).toString("hex")}`, type: "webhook", url } });
        expect(res.status, url).toBe(400);
        expect(res.body.message, url).toMatch(/refused/);
      }
      // a public address is fine (IP literal: checked without DNS, nothing is sent)
      expect((await shared.api("POST", "/api/v1/notification-targets", { body: { name: "public", type: "webhook", url: "http://93.184.216.34/hook" } })).status).toBe(201);
    } finally {
      await shared.close();
    }
  });

  it("checks again at delivery time: a refused address fails the delivery at once, recorded", async () => {
    const target = await create({ name: "later refused", type: "webhook", url: receiver.url });
    // as if the URL had been stored under a laxer policy
    await h.services.prisma.notificationTarget.update({ where: { id: target.body.id }, data: { url: h.services.secrets.encrypt("http://169.254.169.254/hook") } });
    const rule = await ruleWithTargets([target.body.id]);
    expect((await h.api("POST", `/api/v1/alert-rules/${rule.id}/test`, { key: acme.key })).status).toBe(202);
    const [delivery] = await settled(rule.id);
    expect(delivery).toMatchObject({ status: "failed", attempts: 1 });
    expect(delivery.attemptLog).toHaveLength(1);
    expect(delivery.attemptLog[0]).toMatchObject({ success: false, statusCode: null });
    expect(delivery.attemptLog[0].error).toMatch(/169.254.169.254.*refused/);
  });
});

describe("deliveries to real peers", () => {
  it("signs webhook bodies, retries after 500 with back-off, and records every attempt", async () => {
    const target = await create({ name: "flaky hook", type: "webhook", url: `${receiver.url}/flaky` });
    receiver.setSecret(target.body.secret);
    receiver.respondWith([500, 500, 200]);
    const before = receiver.requests.length;
    const rule = await ruleWithTargets([target.body.id]);
    const test = await h.api("POST", `/api/v1/alert-rules/${rule.id}/test`, { key: acme.key });
    expect(test.status, test.text).toBe(202);
    expect(test.body.deliveries).toEqual([{ id: expect.any(String), targetId: target.body.id, targetName: "flaky hook", targetType: "webhook", status: "pending" }]);

    await receiver.waitFor(before + 3);
    const [delivery] = await settled(rule.id);
    const requests = receiver.requests.slice(before);
    expect(requests.map((r) => r.status)).toEqual([500, 500, 200]);
    for (const [i, r] of requests.entries()) {
      expect(r.method).toBe("POST");
      expect(r.headers["content-type"]).toBe("application/json");
      expect(r.signatureValid, "X-Signature is HMAC-SHA256 of the body").toBe(true);
      expect(r.headers["x-delivery-id"]).toBe(delivery.id);
      expect(r.headers["x-delivery-attempt"]).toBe(String(i + 1));
      expect(r.json).toMatchObject({ event: "alert.test", deliveryId: delivery.id, organizationId: acme.org.id, rule: { id: rule.id, name: rule.name, severity: "critical", summary: "deployment failed" } });
    }
    expect(delivery).toMatchObject({ status: "delivered", attempts: 3, maxAttempts: 3, lastStatusCode: 200, lastError: null, event: "test", targetName: "flaky hook" });
    expect(delivery.deliveredAt).not.toBeNull();
    expect(delivery.attemptLog.map((a: any) => [a.attempt, a.statusCode, a.success])).toEqual([[1, 500, false], [2, 500, false], [3, 200, true]]);
    expect(delivery.attemptLog[0].error).toMatch(/^HTTP 500/);
    for (const a of delivery.attemptLog) expect(a.durationMs).toBeGreaterThanOrEqual(0);
    // back-off: the attempts did not follow each other at once
    const started = delivery.attemptLog.map((a: any) => Date.parse(a.startedAt));
    expect(started[1] - started[0]).toBeGreaterThanOrEqual(40);
  });

  it("gives up after NOTIFICATION_MAX_ATTEMPTS, with the last status and error", async () => {
    const target = await create({ name: "broken hook", type: "webhook", url: `${receiver.url}/broken` });
    receiver.respondWith([503]);
    const rule = await ruleWithTargets([target.body.id]);
    await h.api("POST", `/api/v1/alert-rules/${rule.id}/test`, { key: acme.key });
    const [delivery] = await settled(rule.id);
    expect(delivery).toMatchObject({ status: "failed", attempts: 3, lastStatusCode: 503 });
    expect(delivery.lastError).toMatch(/HTTP 503/);
    expect(delivery.attemptLog.map((a: any) => a.success)).toEqual([false, false, false]);
    receiver.respondWith([200]);
  });

  it("delivers to Slack-compatible webhooks and e-mail", async () => {
    const slack = await create({ name: "team chat", type: "slack", url: `${receiver.url}/slack` });
    const mail = await create({ name: "on-call mail", type: "email", recipients: ["oncall@example.test", "lead@example.test"] });
    expect(mail.status, mail.text).toBe(201);
    const before = receiver.requests.length;
    const rule = await ruleWithTargets([slack.body.id, mail.body.id]);
    await h.api("POST", `/api/v1/alert-rules/${rule.id}/test`, { key: acme.key });
    const all = await settled(rule.id);
    expect(all.map((d) => [d.targetType, d.status]).sort()).toEqual([["email", "delivered"], ["slack", "delivered"]]);
    const slackRequest = receiver.requests.slice(before).find((r) => r.path === "/slack")!;
    expect(Object.keys(slackRequest.json)).toEqual(["text"]);
    expect(slackRequest.json.text).toContain(rule.name);
    const [message] = await smtp.waitFor(1);
    expect(message.to).toEqual(["<oncall@example.test>", "<lead@example.test>"]);
    expect(message.data).toContain(rule.name);
    expect(all.find((d) => d.targetType === "email").lastStatusCode).toBe(250);
  });

  it("refuses e-mail targets when no SMTP server is configured", async () => {
    const other = await createHarness();
    try {
      const res = await other.api("POST", "/api/v1/notification-targets", { body: { name: "mail", type: "email", recipients: ["a@example.test"] } });
      expect(res.status).toBe(400);
      expect(res.body.message).toMatch(/SMTP_URL/);
    } finally {
      await other.close();
    }
  });
});
