// The "config source failing" alert condition (issue 33): a config source on a loopback Git
// server whose branch gets a bad document is refused; the evaluation fires an alert whose
// subject is the source (GET /alerts names it, the signed webhook payload names it), which
// can be acknowledged; the fixed document applies and the next evaluation resolves it.
// Validation: a bad condition is a 400 naming the field; another tenant's rule is a 404.
import crypto from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { startGitServer, type GitServer } from "../../support/git-server/index.js";
import { startWebhookReceiver, type WebhookReceiver } from "../../support/webhook-receiver.js";
import { JobRunner } from "../../../src/jobs/runner.js";
import { deliveryJob } from "../../../src/modules/notification-targets/deliveries.js";
import { evaluateRulesOnce } from "../../../src/modules/alerts/evaluate.js";

let h: Harness;
let git: GitServer;
let receiver: WebhookReceiver;
let runner: JobRunner;
let acme: Tenant;
let globex: Tenant;
let hookId: string;
let sourceId: string;
let otherSourceId: string;

const sources = (t: Tenant) => `/api/v1/organizations/${t.org.id}/config/sources`;
const role = (name: string) => `apiVersion: fleet.app/v1\nkind: Role\nmetadata: { name: ${name} }\nspec:\n  permissions: [devices:read]\n`;
const BAD = "apiVersion: fleet.app/v1\nkind: AlertRule\nmetadata: { name: broken }\nspec:\n  condition: { type: no_such_condition }\n";
const sync = (id: string) => h.api("POST", `${sources(acme)}/${id}/sync`, { key: acme.key });
const createRule = (body: Record<string, unknown>, t = acme) =>
  h.api("POST", "/api/v1/alert-rules", { key: t.key, body: { name: `rule-${crypto.randomBytes(3).toString("hex")}`, ...body } });
const requestsFor = (ruleId: string) => receiver.requests.filter((r) => r.json?.rule?.id === ruleId);

beforeAll(async () => {
  [h, git, receiver] = await Promise.all([
    createHarness({ NOTIFICATION_RETRY_BASE_MS: "100", NOTIFICATION_MAX_ATTEMPTS: "3" }), startGitServer(), startWebhookReceiver(),
  ]);
  acme = await h.createTenant("Acme Source Alerts");
  globex = await h.createTenant("Globex Source Alerts");
  const hook = await h.api("POST", "/api/v1/notification-targets", { key: acme.key, body: { name: "ops hook", type: "webhook", url: `${receiver.url}/alerts` } });
  expect(hook.status, hook.text).toBe(201);
  hookId = hook.body.id;
  receiver.setSecret(hook.body.secret);
  const { url } = await git.createRepo("fleet", { "fleet/roles.yaml": role("readers") });
  const created = await h.api("POST", sources(acme), { key: acme.key, body: { name: "main-config", url, branch: "main", path: "fleet", pollIntervalSeconds: 0 } });
  expect(created.status, created.text).toBe(201);
  sourceId = created.body.id;
  const { url: otherUrl } = await git.createRepo("other", { "roles.yaml": role("others") });
  const other = await h.api("POST", sources(acme), { key: acme.key, body: { name: "other-config", url: otherUrl, branch: "main", path: "/", pollIntervalSeconds: 0 } });
  expect(other.status, other.text).toBe(201);
  otherSourceId = other.body.id;
  runner = new JobRunner(h.services, { definitions: [deliveryJob(h.services.config)], pollIntervalMs: 50, concurrency: 2 });
  runner.start();
});

afterAll(async () => {
  await runner?.stop();
  await h?.close();
  await git?.close();
  await receiver?.close();
});

describe("config_source_failing rules", () => {
  it("validates the condition: a 400 names the field; another tenant's rule is a 404", async () => {
    const zero = await createRule({ condition: { type: "config_source_failing", consecutiveFailures: 0 } });
    expect(zero.status).toBe(400);
    expect(zero.body.message).toContain("consecutiveFailures");
    const unknown = await createRule({ condition: { type: "config_source_failing", sourceNames: ["no-such-source"] } });
    expect(unknown.status).toBe(400);
    expect(unknown.body.message).toContain("condition.sourceNames: unknown config source no-such-source");
    const labels = await createRule({ condition: { type: "config_source_failing" }, labelSelector: { site: "berlin" } });
    expect(labels.status).toBe(400);
    expect(labels.body.message).toContain("labelSelector");

    const theirs = await createRule({ condition: { type: "config_source_failing" } }, globex);
    expect(theirs.status, theirs.text).toBe(201);
    expect(theirs.body.summary).toBe("config source failing (last sync refused or failed)");
    expect((await h.api("GET", `/api/v1/alert-rules/${theirs.body.id}`, { key: acme.key })).status).toBe(404);
    expect((await h.api("PATCH", `/api/v1/alert-rules/${theirs.body.id}`, { key: acme.key, body: { condition: { type: "config_source_failing", consecutiveFailures: 2 } } })).status).toBe(404);
    expect((await h.api("DELETE", `/api/v1/alert-rules/${theirs.body.id}`, { key: acme.key })).status).toBe(404);
  });

  it("fires on a refused sync naming the source (GET /alerts, webhook), and resolves when a sync applies again", async () => {
    const first = await sync(sourceId);
    expect(first.body.status, first.text).toBe("applied");
    expect((await sync(otherSourceId)).body.status).toBe("applied");
    const created = await createRule({
      condition: { type: "config_source_failing", sourceNames: ["main-config"] }, severity: "critical", cooldownSeconds: 0, targetIds: [hookId],
    });
    expect(created.status, created.text).toBe(201);
    const rule = created.body;
    expect(rule.condition).toEqual({ type: "config_source_failing", consecutiveFailures: 1, sourceNames: ["main-config"] });
    expect(rule.summary).toBe("config source failing (last sync refused or failed): main-config");

    // nothing fails yet
    expect((await evaluateRulesOnce(h.services, { organizationId: acme.org.id })).fired).toBe(0);

    // a bad document on the branch: the sync is refused, the last good commit stays applied
    await git.commit("fleet", { "fleet/bad.yaml": BAD });
    const refused = await sync(sourceId);
    expect(refused.body.status, refused.text).toBe("refused");
    // the other source fails too (its repository is gone from its URL), but the rule names only main-config
    expect((await h.api("PATCH", `${sources(acme)}/${otherSourceId}`, { key: acme.key, body: { url: `${git.url}/gone.git` } })).status).toBe(200);
    expect((await sync(otherSourceId)).body.status).toBe("failed");

    const evaluated = await evaluateRulesOnce(h.services, { organizationId: acme.org.id });
    expect(evaluated.fired).toBe(1);
    const firing = await h.api("GET", `/api/v1/alerts?ruleId=${rule.id}`, { key: acme.key });
    expect(firing.status, firing.text).toBe(200);
    expect(firing.body.total).toBe(1);
    expect(firing.body.items[0]).toMatchObject({
      ruleId: rule.id, ruleName: rule.name, severity: "critical", conditionType: "config_source_failing",
      subjectType: "config_source", subjectId: sourceId, subjectName: "main-config", deviceId: null, deviceName: null, state: "firing", value: 1,
    });
    // the filters: by subject, by subject type; a device filter does not find it
    expect((await h.api("GET", `/api/v1/alerts?subjectId=${sourceId}`, { key: acme.key })).body.total).toBe(1);
    expect((await h.api("GET", `/api/v1/alerts?subjectType=device&ruleId=${rule.id}`, { key: acme.key })).body.total).toBe(0);
    expect((await h.api("GET", `/api/v1/alerts?deviceId=${sourceId}`, { key: acme.key })).body.total).toBe(0);
    expect((await h.api("GET", `/api/v1/alerts?ruleId=${rule.id}`, { key: globex.key })).body.total).toBe(0);
    expect((await h.api("GET", `/api/v1/alert-rules/${rule.id}`, { key: acme.key })).body.firingCount).toBe(1);

    // the signed webhook payload names the source and why its sync was refused
    await expect.poll(() => requestsFor(rule.id).length, { timeout: 10_000 }).toBe(1);
    const [fired] = requestsFor(rule.id);
    expect(fired.signatureValid).toBe(true);
    expect(fired.json).toMatchObject({
      event: "alert.firing", subjectType: "config_source", subjectCount: 1, devices: [], deviceCount: 0,
      rule: { id: rule.id, condition: { type: "config_source_failing" } },
      subjects: [{ type: "config_source", id: sourceId, name: "main-config", value: 1 }],
    });
    expect(fired.json.subjects[0].detail).toContain("fleet/bad.yaml:5");
    expect(fired.json.message).toContain("firing on 1 config source: main-config (1)");
    const deliveries = await h.api("GET", `/api/v1/alert-rules/${rule.id}/deliveries`, { key: acme.key });
    expect(deliveries.body.items[0]).toMatchObject({ event: "firing", configSourceId: sourceId, deviceId: null });

    // acknowledge by subjectId; another tenant cannot; a deviceId naming the source is not its alert
    expect((await h.api("POST", "/api/v1/alerts/acknowledge", { key: globex.key, body: { ruleId: rule.id, subjectId: sourceId } })).status).toBe(404);
    expect((await h.api("POST", "/api/v1/alerts/acknowledge", { key: acme.key, body: { ruleId: rule.id, deviceId: sourceId } })).status).toBe(404);
    const noKey = await h.api("POST", "/api/v1/alerts/acknowledge", { key: acme.key, body: { ruleId: rule.id } });
    expect(noKey.status).toBe(400);
    expect(noKey.body.message).toContain("subjectId");
    const acked = await h.api("POST", "/api/v1/alerts/acknowledge", { key: acme.key, body: { ruleId: rule.id, subjectId: sourceId } });
    expect(acked.status, acked.text).toBe(200);
    expect(acked.body).toMatchObject({ subjectType: "config_source", subjectName: "main-config", state: "firing" });
    expect(acked.body.acknowledgedBy).toBeTruthy();

    // still refused at the next evaluation: nothing new
    expect((await evaluateRulesOnce(h.services, { organizationId: acme.org.id })).fired).toBe(0);

    // fix the document, sync: applied; the evaluation resolves the alert and notifies it
    await git.commit("fleet", { "fleet/bad.yaml": "# fixed\n" });
    expect((await sync(sourceId)).body.status).toBe("applied");
    expect((await evaluateRulesOnce(h.services, { organizationId: acme.org.id })).resolved).toBe(1);
    expect((await h.api("GET", `/api/v1/alerts?ruleId=${rule.id}`, { key: acme.key })).body.total).toBe(0);
    const resolved = await h.api("GET", `/api/v1/alerts?ruleId=${rule.id}&state=resolved`, { key: acme.key });
    expect(resolved.body.items[0]).toMatchObject({ subjectType: "config_source", subjectId: sourceId, subjectName: "main-config", state: "resolved", resolvedBy: null });
    await expect.poll(() => requestsFor(rule.id).length, { timeout: 10_000 }).toBe(2);
    expect(requestsFor(rule.id)[1].json).toMatchObject({ event: "alert.resolved", subjectType: "config_source", subjects: [{ id: sourceId, name: "main-config" }] });
  });

  it("counts failures in a row: fires only from the n-th, for every source when none is named; resolve by hand", async () => {
    const created = await createRule({ condition: { type: "config_source_failing", consecutiveFailures: 2 } });
    expect(created.status, created.text).toBe(201);
    const rule = created.body;
    // other-config failed once since its last applied sync
    expect((await evaluateRulesOnce(h.services, { organizationId: acme.org.id })).fired).toBe(0);
    const { url } = await git.createRepo("other-bad", { "bad.yaml": BAD });
    expect((await h.api("PATCH", `${sources(acme)}/${otherSourceId}`, { key: acme.key, body: { url } })).status).toBe(200);
    expect((await sync(otherSourceId)).body.status).toBe("refused");
    await evaluateRulesOnce(h.services, { organizationId: acme.org.id });
    const firing = await h.api("GET", `/api/v1/alerts?ruleId=${rule.id}`, { key: acme.key });
    expect(firing.body.items.map((a: { subjectName: string; value: number }) => [a.subjectName, a.value])).toEqual([["other-config", 2]]);

    const resolved = await h.api("POST", "/api/v1/alerts/resolve", { key: acme.key, body: { ruleId: rule.id, subjectId: otherSourceId } });
    expect(resolved.status, resolved.text).toBe(200);
    expect(resolved.body).toMatchObject({ subjectType: "config_source", subjectName: "other-config", state: "resolved" });
    expect(resolved.body.resolvedBy).toBeTruthy();
  });
});
