// Maintenance windows over the agent protocol: one deployment, two devices whose `tz` labels
// put them in different time zones. The window is placed around the current time in UTC, so
// the UTC device is inside it (told to install) and the Asia/Kolkata one (5:30 ahead) outside
// (told to download only, with its next window's start), whatever the time the test runs.
// The rollout status counts it as waiting_for_window; the batch timeout counts window time only.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import type { EnrolledDevice } from "../agent/fleet-support.js";
import { deadlineInWindows } from "../../../src/modules/rollout-engine/windows.js";
import { agentHeartbeat, enrollFleet, importVersion } from "./support.js";

let h: Harness;
let acme: Tenant;
let appId: string;
let utc: EnrolledDevice;
let kolkata: EnrolledDevice;

beforeAll(async () => {
  h = await createHarness();
  acme = await h.createTenant("Acme Windows");
  appId = await importVersion(h, acme.org.id, { version: "1.0.0", parametersYaml: "  {}\n" });
  [utc] = await enrollFleet(h, acme.key, 1, { labels: { ring: "win", tz: "UTC" } });
  [kolkata] = await enrollFleet(h, acme.key, 1, { labels: { ring: "win", tz: "Asia/Kolkata" } });
}, 120_000);

afterAll(async () => {
  await h?.close();
});

const clock = (ms: number) => new Date(ms).toISOString().slice(11, 16);
const EVERY_DAY = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"];

describe("maintenance windows", () => {
  // opened five minutes ago, open for an hour (every day, local time)
  const opened = Math.floor((Date.now() - 5 * 60_000) / 60_000) * 60_000;
  const windows = [{ days: EVERY_DAY, start: clock(opened), end: clock(opened + 3600_000) === "00:00" ? "24:00" : clock(opened + 3600_000) }];
  let id: string;

  it("tells the device inside its window to install, the one outside to download only, with its next window", async () => {
    const res = await h.api("POST", "/api/v1/deployments", {
      key: acme.key,
      body: {
        name: "nightly", applicationId: appId, version: "1.0.0", profileId: "compose-main", target: { labelSelector: { ring: "win" } },
        strategy: { type: "staged", canary: { count: 2 }, batches: [], batchTimeoutSeconds: 3600 },
        maintenanceWindows: { timeZone: "UTC", timeZoneLabel: "tz", windows },
      },
    });
    expect(res.status, res.text).toBe(201);
    id = res.body.id;
    expect((await h.api("POST", `/api/v1/deployments/${id}/start`, { key: acme.key })).status).toBe(200);

    const inside = (await agentHeartbeat(h, utc)).find((d) => d.deploymentId === id);
    expect(inside).toMatchObject({ action: "install", window: "open", nextWindowAt: null });
    const outside = (await agentHeartbeat(h, kolkata)).find((d) => d.deploymentId === id) as unknown as { action: string; window: string; nextWindowAt: string };
    expect(outside).toMatchObject({ action: "install", window: "download-only" });
    // the same clock times, 5:30 earlier in UTC, on the next day
    expect(Date.parse(outside.nextWindowAt)).toBe(opened - 5.5 * 3600_000 + 86_400_000);
  });

  it("counts the device outside as waiting_for_window with the next window's start; the batch timeout counts window time only", async () => {
    const status = (await h.api("GET", `/api/v1/deployments/${id}/rollout`, { key: acme.key })).body;
    expect(status).toMatchObject({
      state: "canary",
      windows: { waiting: 1, nextWindowAt: new Date(opened - 5.5 * 3600_000 + 86_400_000).toISOString() },
      batches: [{ counts: { pending: 1, waitingForWindow: 1 } }],
    });
    const startedAt = Date.parse(status.batches[0].startedAt);
    // less than an hour of this window is left: the rest of the hour runs in tomorrow's window
    expect(Date.parse(status.batches[0].deadlineAt)).toBe(deadlineInWindows(windows as never, "UTC", startedAt, 3600));
    expect(Date.parse(status.batches[0].deadlineAt)).toBeGreaterThan(startedAt + 20 * 3600_000);
    const d = (await h.api("GET", `/api/v1/deployments/${id}`, { key: acme.key })).body;
    expect(d.progress).toMatchObject({ pending: 1, waiting_for_window: 1 });
  });

  it("the device inside runs it; the device outside is still only told to download", async () => {
    await agentHeartbeat(h, utc, [{ deploymentId: id, state: "running" }]);
    await agentHeartbeat(h, kolkata, [{ deploymentId: id, state: "downloading" }]);
    const again = (await agentHeartbeat(h, kolkata)).find((d) => d.deploymentId === id);
    expect(again).toMatchObject({ window: "download-only" });
    const status = (await h.api("GET", `/api/v1/deployments/${id}/rollout`, { key: acme.key })).body;
    expect(status.batches[0].counts).toMatchObject({ running: 1, waitingForWindow: 1 });
  });
});
