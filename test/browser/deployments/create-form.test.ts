// The guided deployment form in Chromium, against a real service and an application imported
// from a Git registry on loopback whose parameters have an enum, a range, a pattern, a required
// value and a secret:
// * the browser refuses what the API refuses, each problem named next to its field in the
//   API's own words (the API is asked the same question beside it);
// * a staged deployment goes through the review page; the API's stored deployment equals what
//   was entered, and the batch sizes the form previewed are the ones the service plans;
// * the secret never comes back: not in the page, not in any response the page received;
// * the same form edits the draft (PATCH), keeping the secret and the options;
// * a profile for some architectures (arm64 and arm, over simulated devices that report arm64,
//   amd64 and armv7): the target step says how many devices match and how many can run it, as
//   the service's POST /groups/eligibility counts them (armv7 is arm), the batch preview is cut
//   from those, and the rollout the service plans covers exactly them; maintenance windows are
//   refused in the API's words when they never open, then stored as entered, added by an edit
//   and cleared by one.
import { beforeAll, describe, expect, it } from "vitest";
import type { Page } from "playwright-core";
import { peerAvailable } from "../../support/peers.js";
import { ADMIN, type ConsoleService } from "../../support/console-service.js";
import { consoleSuite, waitForPath, waitForText } from "../../support/browser.js";
import { component, importApplications, type ImportedCatalog } from "./support.js";

const SECRET = "tok-Very-Secret-4711";
const gatewayTargets = (pointer: string) => [{ pointer, components: ["gateway"] }];
const PARAMETERS = {
  mode: { value: "fast", schema: { enum: ["fast", "safe"] }, targets: gatewayTargets("MODE") },
  pollSeconds: { value: 30, schema: { type: "integer", minimum: 5, maximum: 3600 }, targets: gatewayTargets("POLL_SECONDS") },
  siteCode: { required: true, description: "the site's code", schema: { type: "string", pattern: "^[A-Z]{3}-[0-9]{2}$" }, targets: gatewayTargets("SITE") },
  apiToken: { required: true, secret: true, schema: { type: "string", maxLength: 20 }, targets: gatewayTargets("API_TOKEN") },
};

let service: ConsoleService;
let catalog: ImportedCatalog;

/** The problem shown next to the field named `label` (its aria-describedby error), or null. */
async function fieldProblem(page: Page, label: string): Promise<string | null> {
  const input = page.getByLabel(label, { exact: true });
  const describedBy = (await input.getAttribute("aria-describedby")) ?? "";
  const errorId = describedBy.split(" ").find((id) => id.endsWith("-error"));
  if (!errorId) return null;
  expect(await input.getAttribute("aria-invalid")).toBe("true");
  return (await page.locator(`[id="${errorId}"]`).textContent())?.trim() ?? null;
}

/** The API's verdict on the same parameter values, by parameter (from its 400 message). */
async function apiProblems(parameters: Record<string, unknown>): Promise<Record<string, string>> {
  const res = await service.api("POST", "/api/v1/deployments", {
    body: { name: "api-check", applicationId: catalog.apps["vision-gateway"], version: "1.0.0", profileId: "compose-any", parameters, target: { labelSelector: { site: "turin" } } },
  });
  expect(res.status, res.text).toBe(400);
  const message: string = res.body.message ?? res.text;
  return Object.fromEntries([...message.matchAll(/parameters\.(\w+): ([^;]+)/g)].map((m) => [m[1], m[2].trim()]));
}

describe.skipIf(!peerAvailable("chromium"))("console deployment form", () => {
  const suite = consoleSuite();

  beforeAll(async () => {
    service = suite.service;
    catalog = await importApplications(service, {
      "vision-gateway": {
        name: "Vision Gateway",
        profiles: [
          { id: "compose-any", type: "compose", components: [component("gateway")] },
          { id: "compose-arm", type: "compose", components: [component("gateway")], requiredResources: { cpu: { cores: 1, architectures: ["arm64", "arm"] } } },
        ],
        parameters: PARAMETERS,
      },
    });
    await service.enrollFleet({ prefix: "turin", devices: 6, labels: { site: "turin" } });
    await service.enrollFleet({ prefix: "milan", devices: 2, labels: { site: "milan" } });
  }, 180_000);

  it("refuses what the API refuses, creates a staged deployment through the review, never shows the secret again, and edits it", async () => {
    const ui = await suite.open({ user: ADMIN });
    const received: string[] = [];
    ui.page.on("response", async (response) => {
      const url = new URL(response.url());
      if (!url.pathname.startsWith("/trpc") && !url.pathname.startsWith("/api")) return;
      received.push(await response.text().catch(() => ""));
    });
    const page = ui.page;
    await ui.goto("/deployments/new");

    // Application: the profile that cannot run everywhere names what it does not run on.
    await page.getByLabel("Name", { exact: true }).fill("vision rollout");
    await page.getByLabel("Application", { exact: true }).selectOption({ label: "Vision Gateway (1.0.0)" });
    const armProfile = page.getByRole("radio", { name: /compose-arm/ });
    await armProfile.waitFor();
    expect(await page.locator("label.profile-option", { has: armProfile }).textContent()).toContain("not on amd64 (x86_64), riscv64");
    await page.getByRole("radio", { name: /compose-any/ }).check();
    await ui.audit();
    await page.getByRole("button", { name: "Next: Target" }).click();

    // Target: the selector's live count and breakdown are the API's (op 12).
    await page.getByLabel("Devices whose labels match").fill("site=turin");
    const matched = await service.call<{ total: number; byStatus: Record<string, number> }>("POST", "/api/v1/groups/query", { body: { labelSelector: { site: "turin" } } });
    expect(matched.total).toBe(6);
    await waitForText(page.locator(".selector-result"), (t) => t.includes("6 devices match now"));
    expect(await page.getByRole("img", { name: /Matching devices by status/ }).getAttribute("aria-label")).toContain(`Online ${matched.byStatus.online}`);
    await ui.audit();
    await ui.screenshot("deployment-form-target");
    await page.getByRole("button", { name: "Next: Parameters" }).click();

    // Parameters: the enum offers only what the API takes.
    const modeOptions = await page.getByLabel("mode", { exact: true }).locator("option").allTextContents();
    expect(modeOptions).toEqual(["Default (fast)", "fast", "safe"]);
    expect(await apiProblems({ mode: "slow", siteCode: "TUR-01", apiToken: "x" })).toEqual({ mode: "must be one of fast, safe" });
    expect(await page.getByLabel("apiToken", { exact: true }).getAttribute("type")).toBe("password");

    // Checked as each field loses focus: a wrong value is named next to its field before Next,
    // in the API's words, kept current while it is corrected; a field not visited says nothing yet.
    const poll = page.getByLabel("pollSeconds", { exact: true });
    await poll.fill("4");
    expect(await fieldProblem(page, "pollSeconds")).toBeNull(); // still typing
    await poll.press("Tab");
    const tooSmall = (await apiProblems({ pollSeconds: 4, siteCode: "TUR-01", apiToken: "x" })).pollSeconds;
    await expect.poll(() => fieldProblem(page, "pollSeconds")).toBe(tooSmall);
    expect(await fieldProblem(page, "siteCode")).toBeNull();
    await ui.screenshot("deployment-form-parameter-on-blur");
    await poll.fill("");
    await expect.poll(() => fieldProblem(page, "pollSeconds")).toBeNull();

    // Nothing typed: the required ones are named.
    await page.getByRole("button", { name: "Next: Strategy" }).click();
    expect(await fieldProblem(page, "siteCode")).toBe("required");
    expect(await fieldProblem(page, "apiToken")).toBe("required");
    expect(await apiProblems({})).toEqual({ siteCode: "required", apiToken: "required" });

    // Out of range, off the pattern, too long: each named next to its field, in the API's words.
    const wrong = { pollSeconds: "4", siteCode: "berlin", apiToken: "x".repeat(25) };
    for (const [name, value] of Object.entries(wrong)) await page.getByLabel(name, { exact: true }).fill(value);
    await page.getByRole("button", { name: "Next: Strategy" }).click();
    const api = await apiProblems({ pollSeconds: 4, siteCode: "berlin", apiToken: "x".repeat(25) });
    expect(Object.keys(api).sort()).toEqual(["apiToken", "pollSeconds", "siteCode"]);
    for (const name of Object.keys(wrong)) expect(await fieldProblem(page, name), name).toBe(api[name]);
    expect(await fieldProblem(page, "mode")).toBeNull();
    await ui.audit();
    await ui.screenshot("deployment-form-parameters-refused");
    expect(await page.getByRole("button", { name: "Next: Strategy" }).isVisible()).toBe(true); // still on this step

    await page.getByLabel("pollSeconds", { exact: true }).fill("60");
    await page.getByLabel("siteCode", { exact: true }).fill("TUR-01");
    await page.getByLabel("apiToken", { exact: true }).fill(SECRET);
    for (const name of ["pollSeconds", "siteCode", "apiToken"]) expect(await fieldProblem(page, name)).toBeNull();
    await page.getByRole("button", { name: "Next: Strategy" }).click();

    // Strategy: staged, with the preview of its batches over the 6 matching devices.
    await page.getByRole("button", { name: "Staged" }).click();
    await page.getByLabel("Canary", { exact: true }).fill("1");
    await page.getByRole("button", { name: "Add a batch" }).click();
    await page.getByLabel("Success threshold (%)").fill("80");
    await page.getByLabel("Failure threshold (%)").fill("25");
    await page.getByLabel("Batch timeout (minutes)").fill("30");
    await page.getByLabel("Retry failed installs automatically").check();
    await page.getByLabel("Attempts in all").fill("4");
    const preview = page.getByRole("list", { name: "Planned batches" });
    await waitForText(preview, (t) => t.includes("Batch 2"));
    const previewed = await preview.getByRole("listitem").allTextContents();
    expect(previewed).toEqual(["Canary: 1 device", "Batch 1: 3 devices", "Batch 2: 2 devices"]);
    await ui.audit();
    await ui.screenshot("deployment-form-strategy");
    await page.getByRole("button", { name: "Next: Review" }).click();

    // Review, then create.
    const review = page.getByRole("region", { name: "Review" });
    await waitForText(review, (t) => t.includes("vision rollout") && t.includes("site=turin"));
    expect(await review.textContent()).not.toContain(SECRET);
    await ui.audit();
    await ui.screenshot("deployment-form-review");
    await page.getByRole("button", { name: "Create deployment" }).click();
    const landed = await waitForPath(page, (url) => /^\/deployments\/[0-9a-f-]{36}$/.test(url.pathname), "the new deployment's page");
    const id = landed.pathname.split("/").pop()!;
    await ui.settled();
    await ui.audit();

    const stored = await service.call("GET", `/api/v1/deployments/${id}`);
    expect(stored).toMatchObject({
      name: "vision rollout",
      description: null,
      applicationId: catalog.apps["vision-gateway"],
      version: "1.0.0",
      profileId: "compose-any",
      parameters: { pollSeconds: 60, siteCode: "TUR-01", apiToken: "********" },
      secretParameterNames: ["apiToken"],
      target: { labelSelector: { site: "turin" } },
      strategy: { type: "staged", canary: { count: 1 }, batches: [{ percent: 50 }, { percent: 50 }], successThreshold: 80, failureThreshold: 25, autoAdvance: false, batchTimeoutSeconds: 1800 },
      retry: { maxAttempts: 4, initialDelaySeconds: 60, maxDelaySeconds: 900 },
      continuous: false,
      status: "draft",
    });
    expect(Object.keys(stored.parameters).sort()).toEqual(["apiToken", "pollSeconds", "siteCode"]);

    // The batches the service plans are the ones previewed.
    await service.call("POST", `/api/v1/deployments/${id}/rollout/initialize`);
    const rollout = await service.call<{ batches: { kind: string; size: number }[] }>("GET", `/api/v1/deployments/${id}/rollout`);
    expect(rollout.batches.map((b) => `${b.kind === "canary" ? "Canary" : "Batch"}: ${b.size}`)).toEqual(["Canary: 1", "Batch: 3", "Batch: 2"]);

    // The edit form: prefilled, the secret's field empty; a new name is saved, the secret and options kept.
    await ui.goto(`/deployments/${id}/edit`);
    await expect(page.getByLabel("Name", { exact: true }).inputValue()).resolves.toBe("vision rollout");
    await page.getByLabel("Name", { exact: true }).fill("vision rollout (turin)");
    await page.getByRole("button", { name: "Next: Target" }).click();
    await waitForText(page.locator(".selector-result"), (t) => t.includes("6 devices match now"));
    await page.getByRole("button", { name: "Next: Parameters" }).click();
    expect(await page.getByLabel("apiToken", { exact: true }).inputValue()).toBe("");
    expect(await page.getByLabel("siteCode", { exact: true }).inputValue()).toBe("TUR-01");
    await page.getByRole("button", { name: "Next: Strategy" }).click();
    expect(await page.getByLabel("Attempts in all").inputValue()).toBe("4");
    // A draft created without maintenance windows gets them in the edit.
    expect(stored.maintenanceWindows).toBeNull();
    await page.getByLabel("Install only in maintenance windows").check();
    await page.getByLabel("Time zone", { exact: true }).fill("Europe/Rome");
    await page.getByLabel("Install window 1 opens at").fill("22:00");
    await page.getByLabel("Install window 1 closes at").fill("23:30");
    await page.getByRole("button", { name: "Next: Review" }).click();
    await waitForText(page.getByRole("region", { name: "Review" }), (t) => t.includes("22:00–23:30 (Europe/Rome)"));
    await ui.audit();
    await page.getByRole("button", { name: "Save changes" }).click();
    await waitForPath(page, (url) => url.pathname === `/deployments/${id}`, "the deployment's page");
    const edited = await service.call("GET", `/api/v1/deployments/${id}`);
    expect(edited).toMatchObject({ name: "vision rollout (turin)", parameters: stored.parameters, secretParameterNames: ["apiToken"], strategy: stored.strategy, retry: stored.retry });
    expect(edited.maintenanceWindows).toEqual({ timeZone: "Europe/Rome", windows: [{ days: ["mon", "tue", "wed", "thu", "fri"], start: "22:00", end: "23:30" }] });

    // The secret never came back.
    expect(await page.content()).not.toContain(SECRET);
    expect(received.length).toBeGreaterThan(10);
    expect(received.filter((body) => body.includes(SECRET))).toEqual([]);
  }, 180_000);

  it("previews batches over the devices the profile runs on, and edits maintenance windows", async () => {
    const ui = await suite.open({ user: ADMIN });
    const page = ui.page;
    await ui.goto("/deployments/new");
    await page.getByLabel("Name", { exact: true }).fill("arm gateways");
    await page.getByLabel("Application", { exact: true }).selectOption({ label: "Vision Gateway (1.0.0)" });
    const armProfile = page.getByRole("radio", { name: /compose-arm/ });
    await armProfile.check();
    // One vocabulary: the profile's architectures named as manifests name them, with what devices report.
    expect(await page.locator("label.profile-option", { has: armProfile }).textContent()).toContain("Runs on arm64 (aarch64), arm (armv7, armv6)");
    await page.getByRole("button", { name: "Next: Target" }).click();

    // The simulator gives devices different architectures (arm64, amd64, armv7); the page says how
    // many match and how many can run the profile, as the service counts them: armv7 runs arm.
    await page.getByLabel("Devices whose labels match").fill("site=turin");
    const reported = await service.call<{ items: { arch: string | null }[] }>("GET", "/api/v1/devices?labels=site%3Dturin&limit=100");
    const archs = reported.items.map((d) => d.arch);
    expect(archs.filter((a) => a === "armv7").length, "the simulated fleet has an armv7 device").toBeGreaterThan(0);
    expect(archs.filter((a) => a === "amd64").length, "and devices the profile cannot run on").toBeGreaterThan(0);
    const fit = await service.call<{ matched: number; eligible: number; skipped: number; skippedByArchitecture: Record<string, number> }>(
      "POST", "/api/v1/groups/eligibility", { body: { labelSelector: { site: "turin" }, architectures: ["arm64", "arm"] } },
    );
    expect(fit).toMatchObject({ matched: 6, eligible: archs.filter((a) => a === "arm64" || a === "armv7").length, skippedByArchitecture: { amd64: archs.filter((a) => a === "amd64").length } });
    // Said once, plainly: how many can run it, and which devices cannot (their number given once).
    const amd64 = fit.skippedByArchitecture.amd64;
    const sentence = `6 devices match: ${fit.eligible} can run this profile; ${amd64} amd64 (x86_64) ${amd64 === 1 ? "device cannot and is" : "devices cannot and are"} skipped`;
    await waitForText(page.getByTestId("target-fit"), (t) => t.includes(sentence));
    expect(await page.getByTestId("target-fit").textContent()).not.toMatch(/\(\d+ skipped: architecture/);
    await ui.audit();
    await ui.screenshot("deployment-form-architecture-fit");
    await page.getByRole("button", { name: "Next: Parameters" }).click();
    await page.getByLabel("siteCode", { exact: true }).fill("TUR-02");
    await page.getByLabel("apiToken", { exact: true }).fill("t");
    await page.getByRole("button", { name: "Next: Strategy" }).click();

    // Staged over the eligible devices only, the preview saying so.
    await page.getByRole("button", { name: "Staged" }).click();
    await page.getByLabel("Canary", { exact: true }).fill("1");
    const preview = page.getByRole("list", { name: "Planned batches" });
    await waitForText(preview, (t) => t.includes("Canary"));
    expect(await page.getByTestId("batch-fit").textContent()).toContain(sentence);
    const sizes = (await preview.getByRole("listitem").allTextContents()).map((t) => Number(/(\d+) devices?$/.exec(t)![1]));
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(fit.eligible);
    await ui.screenshot("deployment-form-architecture-batches");

    // Maintenance windows: a window with no day never opens, refused as the API refuses it.
    await page.getByLabel("Install only in maintenance windows").check();
    await page.getByLabel("Time zone", { exact: true }).fill("Europe/Rome");
    const days = page.getByRole("group", { name: "Install window 1 days" });
    for (const day of ["Mon", "Tue", "Wed", "Thu", "Fri"]) await days.getByLabel(day).uncheck();
    const refused = await service.api("POST", "/api/v1/deployments", {
      body: { name: "x", applicationId: catalog.apps["vision-gateway"], version: "1.0.0", profileId: "compose-any", parameters: { siteCode: "TUR-02", apiToken: "t" }, target: { labelSelector: { site: "turin" } },
        maintenanceWindows: { timeZone: "Europe/Rome", windows: [{ days: [], start: "02:00", end: "04:00" }] } },
    });
    expect(refused.status).toBe(400);
    const windowError = page.locator(".window-row .field__error");
    await waitForText(windowError, (t) => t.length > 0);
    expect(refused.text).toContain((await windowError.textContent())!.trim());
    await page.getByRole("button", { name: "Next: Review" }).click();
    expect(await page.getByRole("button", { name: "Next: Review" }).isVisible()).toBe(true); // still on this step

    await days.getByLabel("Sat").check();
    await days.getByLabel("Sun").check();
    await page.getByLabel("Install window 1 opens at").fill("01:30");
    await page.getByLabel("Install window 1 closes at").fill("05:00");
    await page.getByLabel("Device label with its own time zone (optional)").fill("tz");
    expect(await windowError.count()).toBe(0);
    await ui.audit();
    await ui.screenshot("deployment-form-maintenance-windows");
    await page.getByRole("button", { name: "Next: Review" }).click();
    const review = page.getByRole("region", { name: "Review" });
    await waitForText(review, (t) => t.includes("Sat Sun 01:30–05:00 (Europe/Rome, or the device's tz label)"));
    await page.getByRole("button", { name: "Create deployment" }).click();
    const landed = await waitForPath(page, (url) => /^\/deployments\/[0-9a-f-]{36}$/.test(url.pathname), "the new deployment's page");
    const id = landed.pathname.split("/").pop()!;
    await ui.settled();
    await ui.audit();
    const stored = await service.call<{ maintenanceWindows: unknown; profileId: string }>("GET", `/api/v1/deployments/${id}`);
    expect(stored.profileId).toBe("compose-arm");
    expect(stored.maintenanceWindows).toEqual({ timeZone: "Europe/Rome", timeZoneLabel: "tz", windows: [{ days: ["sat", "sun"], start: "01:30", end: "05:00" }] });

    // The batches the service plans cover exactly the devices the preview counted; it skips the others (the armv7 device is not skipped).
    await service.call("POST", `/api/v1/deployments/${id}/rollout/initialize`);
    const rollout = await service.call<{ batches: { size: number }[]; skippedDevices: number }>("GET", `/api/v1/deployments/${id}/rollout`);
    expect(rollout.batches.map((b) => b.size)).toEqual(sizes);
    expect(rollout.skippedDevices).toBe(fit.skipped);
    const skippedDevices = await service.call<{ items: { reason: string }[] }>("GET", `/api/v1/deployments/${id}/devices?state=skipped&limit=100`);
    expect(skippedDevices.items.map((d) => d.reason).every((r) => r.includes("architecture amd64"))).toBe(true);

    // Editing: the windows come back into the form; removing them clears them (PATCH null).
    await ui.goto(`/deployments/${id}/edit`);
    for (const step of ["Next: Target", "Next: Parameters", "Next: Strategy"]) await page.getByRole("button", { name: step }).click();
    expect(await page.getByLabel("Time zone", { exact: true }).inputValue()).toBe("Europe/Rome");
    await page.getByLabel("Install only in maintenance windows").uncheck();
    await page.getByRole("button", { name: "Next: Review" }).click();
    await page.getByRole("button", { name: "Save changes" }).click();
    await waitForPath(page, (url) => url.pathname === `/deployments/${id}`, "the deployment's page");
    expect((await service.call<{ maintenanceWindows: unknown }>("GET", `/api/v1/deployments/${id}`)).maintenanceWindows).toBeNull();
  }, 180_000);
});
