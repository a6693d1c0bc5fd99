// The overview's "Active alerts" card in Chromium with a real alert: a rule on failed
// containers fires (the service's own evaluation schedule, every 5 s here) for the devices
// that report them, and the card shows each firing alert with its rule, severity, device and
// value as the API lists them, the fleet health card counts them, and a new one appears
// without a reload (the realtime channel's alert events).
import { beforeAll, describe, expect, it } from "vitest";
import { peerAvailable } from "../../support/peers.js";
import { ADMIN, type ConsoleService, type SimulatedFleet } from "../../support/console-service.js";
import { consoleSuite, waitForText, UI_TIMEOUT_MS } from "../../support/browser.js";

let service: ConsoleService;
let fleet: SimulatedFleet;

interface ActiveAlert { ruleName: string; severity: string; deviceName: string | null; value: number | null }

/** Polls the API until `count` alerts are firing. */
async function firing(count: number): Promise<ActiveAlert[]> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const list = await service.call<{ items: ActiveAlert[]; total: number }>("GET", "/api/v1/alerts?state=firing&limit=50");
    if (list.total === count) return list.items;
    if (Date.now() > deadline) throw new Error(`${list.total} alerts firing, not ${count}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

describe.skipIf(!peerAvailable("chromium"))("console overview: active alerts", () => {
  const suite = consoleSuite({ ALERT_EVALUATION_INTERVAL_SECONDS: "5" });

  beforeAll(async () => {
    service = suite.service;
    fleet = await service.enrollFleet({ prefix: "tromso", devices: 3, labels: { site: "tromso" } });
    await service.call("POST", "/api/v1/alert-rules", {
      body: {
        name: "Containers failing", severity: "critical", labelSelector: { site: "tromso" },
        condition: { type: "metric_threshold", metric: "containersFailed", operator: ">", threshold: 0, durationSeconds: 0 },
      },
    });
    fleet.devices[0].failing = true;
    await fleet.heartbeat([fleet.devices[0]]);
    await fleet.sendTelemetry(1);
  });

  it("shows the firing alerts as the API lists them, and a new one live", async () => {
    const [first] = await firing(1);
    expect(first).toMatchObject({ ruleName: "Containers failing", severity: "critical", deviceName: fleet.devices[0].reportedDeviceId });
    expect(first.value).toBeGreaterThan(0);

    const ui = await suite.open({ user: ADMIN });
    await ui.goto("/");
    await ui.page.getByRole("status").filter({ hasText: /^Live$/ }).waitFor();
    const card = ui.page.getByRole("region", { name: "Active alerts" });
    const items = card.getByRole("listitem");
    await waitForText(items.first(), (t) => t.startsWith("critical") && t.includes("Containers failing") && t.includes(`${first.deviceName} · value ${first.value}`));
    expect(await items.count()).toBe(1);
    const health = ui.page.getByRole("region", { name: "Fleet health" });
    await waitForText(health, (t) => t.includes("1 alert firing") && t.includes("1 critical"));
    await ui.screenshot("overview-active-alert");

    // A second device starts failing: its alert appears without a reload.
    fleet.devices[2].failing = true;
    await fleet.heartbeat([fleet.devices[2]]);
    await fleet.sendTelemetry(1, [fleet.devices[2]]);
    const both = await firing(2);
    await items.nth(1).waitFor({ timeout: UI_TIMEOUT_MS });
    const texts = await items.allTextContents();
    expect(texts).toHaveLength(2);
    for (const alert of both) expect(texts.some((t) => t.includes(`${alert.deviceName} · value ${alert.value}`))).toBe(true);
    await waitForText(health, (t) => t.includes("2 alerts firing") && t.includes("2 critical"));
    await ui.audit();
  });
});
