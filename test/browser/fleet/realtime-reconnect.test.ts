// The overview's live channel in Chromium when the connection drops: the browser reaches the
// service through a TCP proxy on loopback that the test cuts (every open connection, the
// WebSocket too, closed by the far side; new ones refused) and restores on the same port.
// The indicator goes from "Live" to "Reconnecting in N s" (the back-off), the page connects
// again by itself once the service is reachable, catches up on what changed meanwhile, and
// shows the next status change live.
import { beforeAll, describe, expect, it } from "vitest";
import { peerAvailable } from "../../support/peers.js";
import { ADMIN, type ConsoleService, type SimulatedFleet } from "../../support/console-service.js";
import { consoleSuite, openConsole, UI_TIMEOUT_MS } from "../../support/browser.js";
import { startTcpProxy } from "../../support/tcp-proxy.js";

let service: ConsoleService;
let fleet: SimulatedFleet;

/** The donut's text equivalent for the API's numbers (fleet/overview.test.ts reads it the same way). */
async function donutName(): Promise<string> {
  const { byStatus } = await service.call<{ byStatus: Record<string, number> }>("GET", "/api/v1/groups/stats");
  return `Devices by status: Online ${byStatus.online}, Offline ${byStatus.offline}, Error ${byStatus.error}, Pending ${byStatus.pending}, Provisioned ${byStatus.provisioned}`;
}

describe.skipIf(!peerAvailable("chromium"))("console realtime reconnect", () => {
  const suite = consoleSuite();

  beforeAll(async () => {
    service = suite.service;
    fleet = await service.enrollFleet({ prefix: "oslo", devices: 4, labels: { site: "oslo" } });
  });

  it("shows the dropped connection, reconnects with back-off, catches up and is live again", async () => {
    const proxy = await startTcpProxy("127.0.0.1", Number(new URL(service.url).port));
    try {
      const proxied = { ...service, url: `http://127.0.0.1:${proxy.port}` };
      const ui = await openConsole(suite.browser, proxied, { user: ADMIN });
      const tickets: number[] = [];
      ui.page.on("response", (res) => {
        if (res.url().includes("realtime.ticket")) tickets.push(res.status());
      });
      await ui.goto("/");
      const indicator = ui.page.getByRole("status").filter({ hasText: /^(Live|Connecting…|Reconnecting.*|Live updates off)$/ });
      await indicator.filter({ hasText: /^Live$/ }).waitFor();
      const status = ui.page.getByRole("region", { name: "Devices by status" });
      await status.getByRole("img", { name: await donutName() }).waitFor();
      expect(tickets).toEqual([200]);

      // The service goes out of reach: the WebSocket is closed under the page.
      await proxy.down();
      await indicator.filter({ hasText: /^Reconnecting in \d+ s$/ }).waitFor();
      await ui.screenshot("realtime-reconnecting");
      // Meanwhile a device fails (the devices reach the service directly).
      fleet.devices[0].failing = true;
      await fleet.heartbeat([fleet.devices[0]]);
      const whileAway = await donutName();

      // Back on the same port: the page reconnects by itself and reads what it missed.
      await proxy.up();
      await indicator.filter({ hasText: /^Live$/ }).waitFor({ timeout: 60_000 });
      expect(tickets.filter((s) => s === 200).length).toBeGreaterThanOrEqual(2);
      await status.getByRole("img", { name: whileAway }).waitFor({ timeout: UI_TIMEOUT_MS });

      // And the next change shows live again.
      fleet.devices[1].failing = true;
      await fleet.heartbeat([fleet.devices[1]]);
      const after = await donutName();
      expect(after).not.toBe(whileAway);
      await status.getByRole("img", { name: after }).waitFor({ timeout: UI_TIMEOUT_MS });
      await ui.audit();
      await ui.screenshot("realtime-live-again");
    } finally {
      await proxy.close();
    }
  });
});
