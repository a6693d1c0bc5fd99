// The rollout options through HTTP: retry, startAt, maintenanceWindows, disruptionBudget,
// continuous and onLeave are stored and answered as given, can be changed and cleared while
// the deployment is a draft, and every bad input is a 400 naming the field with nothing stored.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { importVersion } from "./support.js";

let h: Harness;
let acme: Tenant;
let appId: string;

beforeAll(async () => {
  h = await createHarness();
  acme = await h.createTenant("Acme Options");
  appId = await importVersion(h, acme.org.id, { version: "1.0.0", parametersYaml: "  {}\n" });
});

afterAll(async () => {
  await h?.close();
});

const inAnHour = () => new Date(Date.now() + 3600_000).toISOString();

const OPTIONS = {
  retry: { maxAttempts: 4, initialDelaySeconds: 30, maxDelaySeconds: 600 },
  maintenanceWindows: {
    timeZone: "Europe/Berlin",
    timeZoneLabel: "tz",
    windows: [{ days: ["mon", "tue", "wed", "thu", "fri"], start: "02:00", end: "04:00" }],
    downloadWindows: [{ days: ["sat", "sun"], start: "22:00", end: "06:00" }],
  },
  disruptionBudget: { groupBy: ["site"], maxUnavailable: { percent: 25 } },
  continuous: true,
  onLeave: "keep",
};

function body(overrides: Record<string, unknown> = {}) {
  return {
    name: `opts-${Math.random().toString(36).slice(2, 8)}`,
    applicationId: appId,
    version: "1.0.0",
    profileId: "compose-main",
    target: { labelSelector: { site: "berlin" } },
    ...overrides,
  };
}

/** What a 400 names: each zod issue as "path.to.field: message", or the service's message. */
function named(res: { body: { message?: string; issues?: Array<{ path: string[]; message: string }> } }): string {
  return [res.body.message ?? "", ...(res.body.issues ?? []).map((i) => `${i.path.join(".")}: ${i.message}`)].join("\n");
}

const create = (overrides: Record<string, unknown> = {}) => h.api("POST", "/api/v1/deployments", { key: acme.key, body: body(overrides) });

describe("rollout options", () => {
  it("stores every option and answers it in create, get and list", async () => {
    const startAt = inAnHour();
    const res = await create({ ...OPTIONS, startAt });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({ ...OPTIONS, startAt: new Date(startAt).toISOString(), status: "draft" });
    const got = await h.api("GET", `/api/v1/deployments/${res.body.id}`, { key: acme.key });
    expect(got.body).toMatchObject({ ...OPTIONS, startAt: new Date(startAt).toISOString() });
    const list = await h.api("GET", `/api/v1/deployments?search=${res.body.name}`, { key: acme.key });
    expect(list.body.items[0]).toMatchObject({ id: res.body.id, startAt: new Date(startAt).toISOString(), continuous: true });
  });

  it("defaults to no options: no retry, no schedule, no windows, no budget, not continuous", async () => {
    const res = await create();
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({ retry: null, startAt: null, maintenanceWindows: null, disruptionBudget: null, continuous: false, onLeave: "remove" });
  });

  it("changes and clears options of a draft", async () => {
    const created = await create({ ...OPTIONS, startAt: inAnHour() });
    const id = created.body.id;
    const later = new Date(Date.now() + 7200_000).toISOString();
    const changed = await h.api("PATCH", `/api/v1/deployments/${id}`, { key: acme.key, body: { startAt: later, retry: { maxAttempts: 2, initialDelaySeconds: 5, maxDelaySeconds: 5 } } });
    expect(changed.status, changed.text).toBe(200);
    expect(changed.body).toMatchObject({ startAt: later, retry: { maxAttempts: 2 }, continuous: true });
    const cleared = await h.api("PATCH", `/api/v1/deployments/${id}`, {
      key: acme.key,
      body: { startAt: null, retry: null, maintenanceWindows: null, disruptionBudget: null, continuous: false },
    });
    expect(cleared.status, cleared.text).toBe(200);
    expect(cleared.body).toMatchObject({ startAt: null, retry: null, maintenanceWindows: null, disruptionBudget: null, continuous: false });
    const row = await h.services.prisma.deployment.findUniqueOrThrow({ where: { id } });
    expect(row).toMatchObject({ startAt: null, retry: null, maintenanceWindows: null, disruptionBudget: null, continuous: false });
  });

  const window = (w: Record<string, unknown>) => ({ maintenanceWindows: { timeZone: "Europe/Berlin", windows: [{ days: ["mon"], start: "02:00", end: "04:00", ...w }] } });
  it.each([
    [window({ days: [] }), "maintenanceWindows.windows.0: this window never opens"],
    [window({ start: "03:00", end: "03:00" }), "maintenanceWindows.windows.0: this window never opens"],
    [{ maintenanceWindows: { timeZone: "Europe/Berlin", windows: [{ days: ["mon"], start: "02:00", end: "04:00" }], downloadWindows: [{ days: [], start: "01:00", end: "02:00" }] } }, "maintenanceWindows.downloadWindows.0"],
    [window({ start: "25:00" }), "maintenanceWindows.windows.0.start"],
    [{ maintenanceWindows: { timeZone: "Mars/Olympus", windows: [{ days: ["mon"], start: "02:00", end: "04:00" }] } }, "maintenanceWindows.timeZone"],
    [{ maintenanceWindows: { timeZone: "UTC", windows: [] } }, "maintenanceWindows.windows"],
    [{ disruptionBudget: { groupBy: ["site"], maxUnavailable: { count: 0 } } }, "disruptionBudget.maxUnavailable"],
    [{ disruptionBudget: { groupBy: ["site"], maxUnavailable: { percent: 0 } } }, "disruptionBudget.maxUnavailable"],
    [{ startAt: new Date(Date.now() - 60_000).toISOString() }, "startAt: startAt lies in the past"],
    [{ startAt: "tomorrow" }, "startAt"],
    [{ retry: { maxAttempts: 3, initialDelaySeconds: 600, maxDelaySeconds: 60 } }, "retry.initialDelaySeconds"],
    [{ retry: { maxAttempts: 0, initialDelaySeconds: 1, maxDelaySeconds: 1 } }, "retry.maxAttempts"],
    [{ continuous: true, target: { deviceIds: ["00000000-0000-4000-8000-000000000001"] } }, "continuous"],
    [{ onLeave: "forget" }, "onLeave"],
  ])("refuses %j with 400 naming %s, and stores nothing", async (overrides, field) => {
    const before = await h.services.prisma.deployment.count();
    const res = await create(overrides);
    expect(res.status, res.text).toBe(400);
    expect(named(res)).toContain(field);
    expect(await h.services.prisma.deployment.count()).toBe(before);
  });

  it("refuses a PATCH making a device-list deployment continuous, or a startAt in the past, and changes nothing", async () => {
    const devices = await h.api("POST", "/api/v1/deployments", { key: acme.key, body: body({ target: { labelSelector: { site: "x" } } }) });
    const id = devices.body.id;
    const toList = await h.api("PATCH", `/api/v1/deployments/${id}`, { key: acme.key, body: { continuous: true, target: { deviceIds: ["00000000-0000-4000-8000-000000000001"] } } });
    expect(toList.status, toList.text).toBe(400);
    expect(named(toList)).toContain("continuous: only a labelSelector");
    const past = await h.api("PATCH", `/api/v1/deployments/${id}`, { key: acme.key, body: { startAt: "2020-01-01T00:00:00Z" } });
    expect(past.status, past.text).toBe(400);
    expect(named(past)).toContain("startAt: startAt lies in the past");
    const row = await h.services.prisma.deployment.findUniqueOrThrow({ where: { id } });
    expect(row).toMatchObject({ continuous: false, startAt: null, labelSelector: { site: "x" } });
  });

  it("documents every option with an example in the OpenAPI document", async () => {
    const doc = await h.api("GET", "/api/v1/openapi.json");
    expect(doc.status).toBe(200);
    const text = JSON.stringify(doc.body);
    for (const example of ['"maxAttempts":4', '"timeZoneLabel":"tz"', '"maxUnavailable":{"count":2}', '"2026-12-01T02:00:00Z"']) expect(text).toContain(example);
  });
});
