// Jobs take the rollout engine's maintenance windows and disruption budget, as deployments do
// (src/modules/rollout-engine/): over HTTP against the service, with enrolled devices speaking
// the real heartbeat. A device whose window is closed in its own time zone (its tz label) is
// not handed the action (counted waiting_for_window, the time its window opens stored) until a
// window is open for it, and expires saying it waited for its window; under a budget of one device per site, each site has at most one
// device handed the action and not done (a lease's deferral holds the place), the next one
// admitted when it is done. Bad options: 400 naming the field, nothing stored.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import type { EnrolledDevice } from "../agent/fleet-support.js";
import { beat as jobBeat, beatAll } from "./support.js";
import { enrollFleet } from "../deployments/support.js";
import { disruptionBudget } from "../../../src/modules/rollout-engine/options.js";
import { judgeLiveJobs } from "../../../src/modules/jobs/tick.js";

let h: Harness;
let acme: Tenant;

beforeAll(async () => {
  h = await createHarness();
  acme = await h.createTenant("Acme Job Pacing");
}, 300_000);
afterAll(() => h?.close());

const beat = (device: EnrolledDevice, actions?: unknown[]) => jobBeat(h, device, actions);
const handedTo = (devices: EnrolledDevice[]) => beatAll(h, devices);

const createJob = (body: Record<string, unknown>) => h.api("POST", "/api/v1/jobs", { key: acme.key, body });
const getJob = async (id: string) => (await h.api("GET", `/api/v1/jobs/${id}`, { key: acme.key })).body;
const actionOf = (jobId: string, device: EnrolledDevice) => h.services.prisma.deviceAction.findFirstOrThrow({ where: { jobId, deviceId: device.deviceId } });

const WEEKDAYS = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

/** A window open now in UTC (today, from this hour for two hours: the test never runs into its end), closed now at UTC+14. */
function windowOpenNowInUtc() {
  const now = new Date();
  const hour = now.getUTCHours();
  const clock = (hh: number) => `${String(hh % 24).padStart(2, "0")}:00`;
  return { days: [WEEKDAYS[now.getUTCDay()]], start: clock(hour), end: clock(hour + 2) };
}

describe("maintenance windows", () => {
  it("holds a device whose window is closed in its own time zone until a window is open for it", async () => {
    const utc = await enrollFleet(h, acme.key, 2, { labels: { pool: "win" } });
    const far = await enrollFleet(h, acme.key, 2, { labels: { pool: "win", tz: "Pacific/Kiritimati" } });
    const window = windowOpenNowInUtc();
    const res = await createJob({
      kind: "check-health", target: { labelSelector: { pool: "win" } }, strategy: { canary: { count: 4 } },
      maintenanceWindows: { timeZone: "UTC", timeZoneLabel: "tz", windows: [window] },
    });
    expect(res.status, res.text).toBe(201);
    const job = res.body;
    expect(job.maintenanceWindows).toEqual({ timeZone: "UTC", timeZoneLabel: "tz", windows: [window] });

    const handed = await handedTo([...utc, ...far]);
    expect([...handed.keys()].sort()).toEqual([...utc].sort());
    expect((await getJob(job.id)).counts).toMatchObject({ delivered: 2, waiting_for_window: 2, pending: 0 });
    // the time its window opens: the window's start on its day, in the device's own zone
    for (const device of far) {
      const held = await actionOf(job.id, device);
      expect(held.state).toBe("pending");
      expect(held.windowOpensAt!.getTime()).toBeGreaterThan(Date.now());
      const local = new Intl.DateTimeFormat("en-US", { timeZone: "Pacific/Kiritimati", weekday: "short", hour: "2-digit", minute: "2-digit", hourCycle: "h23" }).format(held.windowOpensAt!);
      expect(local.toLowerCase()).toBe(`${window.days[0]} ${window.start}`);
      const listed = await h.api("GET", `/api/v1/device-actions/${held.id}`, { key: acme.key });
      expect(listed.body).toMatchObject({ state: "pending", windowOpensAt: held.windowOpensAt!.toISOString(), heldForBudget: false });
    }
    // asking again changes nothing
    expect((await handedTo(far)).size).toBe(0);

    // the device's zone becomes one whose window is open now: its next heartbeat takes it
    const moved = await h.api("POST", `/api/v1/devices/${far[0].deviceId}/labels`, { key: acme.key, body: { key: "tz", value: "UTC" } });
    expect(moved.status, moved.text).toBe(200);
    const now = await handedTo(far);
    expect([...now.keys()]).toEqual([far[0]]);
    expect((await actionOf(job.id, far[0])).windowOpensAt).toBeNull();
    expect((await getJob(job.id)).counts).toMatchObject({ delivered: 3, waiting_for_window: 1 });
    // the job expires: the device still waiting for its window never runs it, and says why
    await h.services.prisma.actionJob.update({ where: { id: job.id }, data: { expiresAt: new Date(Date.now() - 1000) } });
    await judgeLiveJobs(h.services);
    expect(await actionOf(job.id, far[1])).toMatchObject({ state: "expired", message: "the job expired while the device waited for its maintenance window" });
    expect(await getJob(job.id)).toMatchObject({ state: "expired", counts: { expired: 4, waiting_for_window: 0 } });
    expect((await handedTo(far)).size).toBe(0);
  });
});

describe("disruption budget", () => {
  it("hands the action to at most one device per site at a time; a deferred device keeps its place; the next is admitted when one is done", async () => {
    const north = await enrollFleet(h, acme.key, 3, { labels: { pool: "budget", site: "north" } });
    const south = await enrollFleet(h, acme.key, 2, { labels: { pool: "budget", site: "south" } });
    const res = await createJob({
      kind: "reboot", reason: "kernel update", target: { labelSelector: { pool: "budget" } },
      strategy: { canary: { count: 5 }, failureThreshold: 50 }, disruptionBudget: { groupBy: ["site"], maxUnavailable: { count: 1 } },
    });
    expect(res.status, res.text).toBe(201);
    const id = res.body.id;
    expect(res.body.disruptionBudget).toEqual({ groupBy: ["site"], maxUnavailable: { count: 1 } });
    expect(res.body.counts).toMatchObject({ pending: 2, waiting_for_budget: 3, queued: 0 });

    const first = await handedTo([...north, ...south]);
    expect(first.size).toBe(2);
    const [northFirst] = [...first.keys()].filter((d) => north.includes(d));
    const [southFirst] = [...first.keys()].filter((d) => south.includes(d));
    expect(northFirst && southFirst).toBeTruthy();
    const waiting = await h.api("GET", `/api/v1/device-actions?jobId=${id}&state=queued&limit=10`, { key: acme.key });
    expect(waiting.body.items.map((a: { heldForBudget: boolean }) => a.heldForBudget)).toEqual([true, true, true]);

    // a lease defers the north device's reboot: it still holds its site's place
    await beat(northFirst, [{ id: first.get(northFirst)![0].id, state: "deferred", deferredUntil: new Date(Date.now() + 600_000).toISOString(), deferredBy: "forklift" }]);
    expect((await handedTo(north.filter((d) => d !== northFirst))).size).toBe(0);

    // the south device fails: the other south device is admitted and handed it, north still waits
    await beat(southFirst, [{ id: first.get(southFirst)![0].id, state: "failed", message: "reboot refused" }]);
    const second = await handedTo([...north.filter((d) => d !== northFirst), ...south]);
    expect([...second.keys()]).toEqual(south.filter((d) => d !== southFirst));

    // the north device reboots: one more north device is admitted, never two
    await beat(northFirst, [{ id: first.get(northFirst)![0].id, state: "succeeded" }]);
    const third = await handedTo(north.filter((d) => d !== northFirst));
    expect(third.size).toBe(1);
    const job = await getJob(id);
    expect(job.counts).toMatchObject({ succeeded: 1, failed: 1, delivered: 2, waiting_for_budget: 1 });
    await h.api("POST", `/api/v1/jobs/${id}/cancel`, { key: acme.key });
    expect((await getJob(id)).counts).toMatchObject({ cancelled: 1, waiting_for_budget: 0 });
  });
});

describe("refusals", () => {
  it("400 naming the field, nothing stored", async () => {
    await enrollFleet(h, acme.key, 1, { labels: { pool: "refusals" } });
    const before = [await h.services.prisma.actionJob.count(), await h.services.prisma.deviceAction.count()];
    const target = { labelSelector: { pool: "refusals" } };
    const windows = (w: Record<string, unknown>) => ({ timeZone: "UTC", windows: [{ days: ["mon"], start: "02:00", end: "04:00", ...w }] });
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ kind: "reboot", target, maintenanceWindows: windows({ start: "25:00" }) }, "maintenanceWindows.windows.0.start: a time of day HH:MM (00:00 to 23:59)"],
      [{ kind: "reboot", target, maintenanceWindows: windows({ end: "02:00" }) }, "maintenanceWindows.windows.0: this window never opens"],
      [{ kind: "reboot", target, maintenanceWindows: { timeZone: "Mars/Olympus", windows: [{ days: ["mon"], start: "02:00", end: "04:00" }] } }, "maintenanceWindows.timeZone: not an IANA time zone"],
      [{ kind: "reboot", target, maintenanceWindows: { timeZone: "UTC", windows: [] } }, "maintenanceWindows.windows: name at least one window"],
      [{ kind: "reboot", target, maintenanceWindows: { ...windows({}), downloadWindows: [] } }, "maintenanceWindows: unknown field \\\"downloadWindows\\\""],
      [{ kind: "reboot", target, disruptionBudget: { groupBy: ["site"], maxUnavailable: { count: 0 } } }, "disruptionBudget.maxUnavailable"],
      [{ kind: "reboot", target, disruptionBudget: { groupBy: ["site"], maxUnavailable: { count: "2" } } }, "disruptionBudget.maxUnavailable"],
      [{ kind: "diagnostics", target, disruptionBudget: { maxUnavailable: { count: 2 } } }, "disruptionBudget: diagnostics disrupts nothing; a budget paces the disruptive kinds"],
    ];
    for (const [body, message] of cases) {
      const res = await createJob(body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(JSON.stringify(res.body), JSON.stringify(body)).toContain(message);
    }
    expect([await h.services.prisma.actionJob.count(), await h.services.prisma.deviceAction.count()]).toEqual(before);
    // the job's budget is its own schema: REST calls did not make the deployments' one coerce text
    expect(disruptionBudget.safeParse({ maxUnavailable: { count: "2" } }).success).toBe(false);
  });
});
