// The Alerts area in Chromium against the real service and simulated devices: a webhook target
// created in the browser (its generated secret shown once, never again), a test sent to it whose
// first attempt fails and second succeeds (the delivery history shows both); an alert rule
// created with the form (the scope's live count of matched devices) fires on the service's own
// evaluation schedule for a simulated device reporting failed containers; its notification
// reaches a webhook receiver on loopback, signed with that secret; the navigation counts the
// firing alert live; acknowledging it, disabling the rule and resolving it in the browser are
// stored as the API then answers. A viewer sees the same pages without a single write control.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { peerAvailable } from "../../support/peers.js";
import { ADMIN, type ConsoleService, type SimulatedFleet } from "../../support/console-service.js";
import { consoleSuite, waitForPath, waitForText } from "../../support/browser.js";
import { startWebhookReceiver, type WebhookReceiver } from "../../support/webhook-receiver.js";

let service: ConsoleService;
let fleet: SimulatedFleet;
let receiver: WebhookReceiver;

interface ApiAlert { ruleId: string; deviceId: string; deviceName: string | null; state: string; acknowledgedBy: string | null; resolvedBy: string | null }

/** Polls the API until `check` holds for what it answers. */
async function until<T>(read: () => Promise<T>, check: (value: T) => boolean, what: string): Promise<T> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const value = await read();
    if (check(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(value)}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

const alertsOf = (ruleId: string, state: "firing" | "resolved") =>
  service.call<{ items: ApiAlert[]; total: number }>("GET", `/api/v1/alerts?state=${state}&ruleId=${ruleId}`);

describe.skipIf(!peerAvailable("chromium"))("console alerts", () => {
  const suite = consoleSuite({ ALERT_EVALUATION_INTERVAL_SECONDS: "5", NOTIFICATION_RETRY_BASE_MS: "200" });
  let ruleId = "";

  beforeAll(async () => {
    service = suite.service;
    receiver = await startWebhookReceiver();
    fleet = await service.enrollFleet({ prefix: "bergen", devices: 3, labels: { site: "bergen" } });
    await service.enrollFleet({ prefix: "stavanger", devices: 2, labels: { site: "stavanger" } });
  });
  afterAll(async () => {
    await receiver?.close();
  });

  it("creates a webhook target (secret shown once) and sends it a test: a failed attempt, then delivered", async () => {
    const ui = await suite.open({ user: ADMIN });
    await ui.goto("/notification-targets");
    await ui.page.getByRole("button", { name: "Add notification target" }).click();
    const dialog = ui.page.getByRole("dialog", { name: "Add a notification target" });
    await dialog.getByLabel("Name").fill("On-call hook");
    await dialog.getByLabel("URL").fill(`${receiver.url}/on-call`);
    await ui.audit();
    await dialog.getByRole("button", { name: "Add target" }).click();
    const secret = (await ui.page.getByTestId("new-secret").textContent())!.trim();
    expect(secret.length).toBeGreaterThanOrEqual(16);
    receiver.setSecret(secret);
    await ui.audit();
    await ui.screenshot("alerts-target-secret");

    const [target] = (await service.call<{ items: { id: string; name: string; url: string; hasSecret: boolean }[] }>("GET", "/api/v1/notification-targets")).items;
    expect(target).toMatchObject({ name: "On-call hook", url: `${receiver.url}/on-call`, hasSecret: true });

    // The secret is gone for good once dismissed, and never part of a page again.
    await ui.page.getByRole("button", { name: "Done" }).click();
    await ui.goto("/notification-targets");
    expect(await ui.page.content()).not.toContain(secret);

    // Editing keeps the stored secret: its field starts empty.
    const row = ui.page.getByRole("row").filter({ hasText: "On-call hook" });
    await row.getByRole("button", { name: "Edit On-call hook" }).click();
    const edit = ui.page.getByRole("dialog", { name: "Edit notification target “On-call hook”" });
    expect(await edit.getByLabel("Signing secret").inputValue()).toBe("");
    expect(await edit.getByLabel("URL").inputValue()).toBe("");
    await edit.getByRole("button", { name: "Cancel" }).click();

    // A test: the receiver fails the first attempt, accepts the retry.
    receiver.respondWith([500, 200]);
    const before = receiver.requests.length;
    await row.getByRole("button", { name: "Send test to On-call hook" }).click();
    const received = (await receiver.waitFor(before + 2, 30_000)).slice(before);
    expect(received.map((r) => [r.json?.event, r.signatureValid, r.status])).toEqual([["alert.test", true, 500], ["alert.test", true, 200]]);

    await row.getByRole("button", { name: "Deliveries of On-call hook" }).click();
    const history = ui.page.getByRole("dialog", { name: "Deliveries of “On-call hook”" });
    const attempts = history.getByRole("list", { name: "Attempts of the test delivery" });
    await waitForText(history.getByRole("row").nth(1), (t) => t.includes("delivered") && t.includes("2 of"));
    const lines = await attempts.getByRole("listitem").allTextContents();
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/failed \(HTTP 500\)/);
    expect(lines[1]).toMatch(/delivered \(HTTP 200\)/);
    const api = await service.call<{ items: { status: string; attemptLog: { statusCode: number }[] }[] }>("GET", `/api/v1/notification-targets/${target.id}/deliveries`);
    expect(api.items[0].status).toBe("delivered");
    expect(api.items[0].attemptLog.map((a) => a.statusCode)).toEqual([500, 200]);
    await ui.audit();
    await ui.screenshot("alerts-target-deliveries");
  }, 120_000);

  it("creates a rule with the form; it fires for a failing device, notifies the webhook signed, and is acknowledged and resolved in the browser", async () => {
    const ui = await suite.open({ user: ADMIN });
    await ui.goto("/alerts");
    await ui.page.getByRole("status").filter({ hasText: /^Live$/ }).waitFor();
    await ui.page.getByRole("navigation", { name: "Alerts area" }).getByRole("link", { name: "Rules" }).click();
    await waitForPath(ui.page, (u) => u.pathname === "/alerts/rules", "the rules page");
    await ui.settled();
    await ui.audit();
    await ui.page.getByRole("link", { name: "New alert rule" }).click();
    await waitForPath(ui.page, (u) => u.pathname === "/alerts/rules/new", "the rule form");
    await ui.settled();

    const form = ui.page.locator("form.rule-form");
    await form.getByLabel("Name", { exact: true }).fill("Containers failing in Bergen");
    await form.getByLabel("Condition type").selectOption("metric_threshold");
    await form.getByLabel("Metric").selectOption("containersFailed");
    await form.getByLabel("Fires when it is").selectOption(">");
    await form.getByLabel("Threshold").fill("0");
    await form.getByLabel("For at least (seconds)").fill("-1");
    await waitForText(form, (t) => t.includes("must be at least 0"));
    await form.getByLabel("For at least (seconds)").fill("0");
    // The fields follow the type: offline has its own duration, a certificate its days.
    await form.getByLabel("Condition type").selectOption("certificate_expiring");
    await form.getByLabel("Expires within (days)").waitFor();
    expect(await form.getByLabel("Metric").count()).toBe(0);
    await form.getByLabel("Condition type").selectOption("metric_threshold");
    await form.getByLabel("Metric").selectOption("containersFailed");
    await form.getByLabel("Threshold").fill("0");
    await form.getByLabel("For at least (seconds)").fill("0");

    await form.getByLabel("Devices whose labels match").fill("site=bergen");
    await waitForText(form.locator(".scope-count"), (t) => t.includes("3 devices match now"));
    await form.getByLabel("Severity").selectOption("critical");
    await form.getByLabel("On-call hook (webhook)").check();
    await ui.audit();
    await ui.screenshot("alerts-rule-form");
    await form.getByRole("button", { name: "Create rule" }).click();
    await waitForPath(ui.page, (u) => u.pathname === "/alerts/rules", "the rule list");
    await ui.settled();

    const [target] = (await service.call<{ items: { id: string }[] }>("GET", "/api/v1/notification-targets")).items;
    const rules = await service.call<{ items: Array<{ id: string; name: string; condition: unknown; labelSelector: unknown; severity: string; targetIds: string[]; enabled: boolean }> }>("GET", "/api/v1/alert-rules");
    expect(rules.items).toHaveLength(1);
    expect(rules.items[0]).toMatchObject({
      name: "Containers failing in Bergen", severity: "critical", enabled: true, labelSelector: { site: "bergen" }, targetIds: [target.id],
      condition: { type: "metric_threshold", metric: "containersFailed", operator: ">", threshold: 0, durationSeconds: 0 },
    });
    ruleId = rules.items[0].id;
    const ruleRow = ui.page.getByRole("row").filter({ hasText: "Containers failing in Bergen" });
    await waitForText(ruleRow, (t) => t.includes("containersFailed > 0") && t.includes("site=bergen") && t.includes("On-call hook") && t.includes("critical"));

    // A device starts failing: the rule fires on the schedule, the navigation counts it live.
    const before = receiver.requests.length;
    fleet.devices[0].failing = true;
    await fleet.heartbeat([fleet.devices[0]]);
    await fleet.sendTelemetry(1, [fleet.devices[0]]);
    const [alert] = (await until(() => alertsOf(ruleId, "firing"), (a) => a.total === 1, "the alert to fire")).items;
    const alertsLink = ui.page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: /^Alerts/ });
    await waitForText(alertsLink, (t) => t.replace(/\s+/g, " ").trim() === "Alerts1 firing");
    await ui.screenshot("alerts-rules-firing");

    // Its notification reached the receiver, signed with the secret shown once.
    const firing = await until(async () => receiver.requests.slice(before).filter((r) => r.json?.event === "alert.firing"), (r) => r.length > 0, "the firing webhook");
    expect(firing[0].signatureValid).toBe(true);
    expect(firing[0].path).toBe("/on-call");
    expect(firing[0].json).toMatchObject({ rule: { id: ruleId, name: "Containers failing in Bergen", severity: "critical" }, deviceCount: 1, devices: [{ id: alert.deviceId }] });

    // Acknowledge in the browser.
    await ui.page.getByRole("navigation", { name: "Alerts area" }).getByRole("link", { name: "Alerts" }).click();
    await waitForPath(ui.page, (u) => u.pathname === "/alerts", "the alert list");
    await ui.settled();
    const label = `Containers failing in Bergen on ${alert.deviceName}`;
    const alertRow = ui.page.getByRole("row").filter({ hasText: alert.deviceName! });
    await alertRow.getByRole("button", { name: `Acknowledge ${label}` }).click();
    const acknowledged = await until(() => alertsOf(ruleId, "firing"), (a) => a.items[0]?.acknowledgedBy === ADMIN.email, "the acknowledgement");
    expect(acknowledged.items[0]).toMatchObject({ state: "firing", deviceId: alert.deviceId });
    await waitForText(alertRow, (t) => t.includes(`${ADMIN.email} ·`));
    expect(await alertRow.getByRole("button", { name: `Acknowledge ${label}` }).count()).toBe(0);
    await ui.audit();
    // docs/images/alerts.png (the README's) is a copy of this picture.
    await ui.screenshot("alerts-active");

    // Disable the rule (its condition still holds: enabled, it would fire again), then resolve by hand.
    await ui.goto("/alerts/rules");
    await ui.page.getByRole("button", { name: "Disable Containers failing in Bergen" }).click();
    await until(() => service.call<{ enabled: boolean }>("GET", `/api/v1/alert-rules/${ruleId}`), (r) => !r.enabled, "the rule to be disabled");
    await ui.page.getByRole("button", { name: "Enable Containers failing in Bergen" }).waitFor();

    await ui.goto("/alerts?severity=critical");
    await ui.page.getByRole("row").filter({ hasText: alert.deviceName! }).getByRole("button", { name: `Resolve ${label}` }).click();
    const confirm = ui.page.getByRole("dialog", { name: `Resolve ${label}?` });
    await ui.audit();
    await confirm.getByRole("button", { name: "Resolve alert" }).click();
    const resolved = await until(() => alertsOf(ruleId, "resolved"), (a) => a.total === 1, "the manual resolution");
    expect(resolved.items[0]).toMatchObject({ state: "resolved", resolvedBy: ADMIN.email, deviceId: alert.deviceId });
    expect((await alertsOf(ruleId, "firing")).total).toBe(0);
    await ui.page.getByRole("heading", { name: "No alert matches these filters" }).waitFor();
    await waitForText(alertsLink, (t) => t.trim() === "Alerts");

    // The history, filtered from the URL: severity, state and device.
    await ui.page.getByLabel("State").selectOption("resolved");
    await waitForPath(ui.page, (u) => u.searchParams.get("state") === "resolved" && u.searchParams.get("severity") === "critical", "the resolved filter in the URL");
    const historyRow = ui.page.getByRole("row").filter({ hasText: alert.deviceName! });
    await waitForText(historyRow, (t) => t.includes(`by ${ADMIN.email}`));
    await historyRow.getByRole("button", { name: `Only this device: ${alert.deviceName}` }).click();
    await waitForPath(ui.page, (u) => u.searchParams.get("device") === alert.deviceId, "the device filter in the URL");
    await ui.settled();
    await ui.audit();
    await ui.screenshot("alerts-history");
    await ui.goto("/alerts?state=resolved&severity=info");
    await ui.page.getByRole("heading", { name: "No alert matches these filters" }).waitFor();
  }, 180_000);

  it("shows a viewer the alerts, rules and targets without any write control", async () => {
    const viewer = await service.createUser("viewer");
    const ui = await suite.open({ user: viewer });
    const writeControl = /^(Add|New|Edit|Delete|Disable|Enable|Send test|Acknowledge|Resolve|Create)/;
    const controls = async () => {
      const main = ui.page.getByRole("main");
      const named = async (role: "button" | "link") =>
        main.getByRole(role).evaluateAll((els) => els.map((el) => (el.getAttribute("aria-label") ?? el.textContent ?? "").trim()));
      return [...(await named("button")), ...(await named("link"))];
    };

    await ui.goto("/alerts?state=resolved");
    await ui.page.getByRole("row").filter({ hasText: "Containers failing in Bergen" }).waitFor();
    expect((await controls()).filter((n) => writeControl.test(n))).toEqual([]);

    await ui.goto("/alerts/rules");
    await ui.page.getByRole("row").filter({ hasText: "Containers failing in Bergen" }).waitFor();
    expect((await controls()).filter((n) => writeControl.test(n))).toEqual([]);
    await ui.screenshot("alerts-rules-viewer");

    await ui.goto("/notification-targets");
    const row = ui.page.getByRole("row").filter({ hasText: "On-call hook" });
    await row.waitFor();
    const names = await controls();
    expect(names).toContain("Deliveries of On-call hook");
    expect(names.filter((n) => writeControl.test(n))).toEqual([]);
    await row.getByRole("button", { name: "Deliveries of On-call hook" }).click();
    await ui.page.getByRole("dialog", { name: "Deliveries of “On-call hook”" }).getByRole("list", { name: "Attempts of the test delivery" }).waitFor();
    await ui.audit();

    await ui.goto("/alerts/rules/new");
    await ui.page.getByRole("heading", { name: "Changing alert rules is not part of your role" }).waitFor();
  }, 120_000);
});
