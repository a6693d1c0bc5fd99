// `npm run demo`'s printout (scripts/demo-banner.ts): it leads with the web console's URL and
// whom to sign in as, before the API, and names what it was given (so a reader can copy it).
import { describe, expect, it } from "vitest";
import { demoBanner, type DemoBannerFacts } from "../../scripts/demo-banner.js";

const FACTS: DemoBannerFacts = {
  base: "http://127.0.0.1:3123",
  operator: { email: "operator@demo.example", password: "demo-operator-password" },
  organizationSlug: "demo",
  enrolledDevices: 50,
  superAdmin: { email: "admin@example.com", password: "generated-pw", apiKey: "fm_admin" },
  demoApiKey: "fm_demo",
  enrollmentToken: "et_demo",
  gitRegistry: { url: "http://127.0.0.1:4000/demo-apps.git", id: "reg-1" },
  deviceId: "dev-1",
};

const lines = (text: string) => text.split("\n");

describe("npm run demo's printout", () => {
  it("names the console URL first, then whom to sign in as", () => {
    const out = lines(demoBanner(FACTS));
    const consoleLine = out.findIndex((l) => l.startsWith(" Web console"));
    expect(out[consoleLine]).toMatch(/^ Web console\s+http:\/\/127\.0\.0\.1:3123\/$/);
    expect(out[consoleLine + 1].trim()).toBe("sign in as operator@demo.example / demo-operator-password");
    expect(out[consoleLine + 2]).toContain("organization 'demo', role operator, 50 live devices");
    // Before any other address: the console is where a newcomer goes.
    const firstOtherUrl = out.findIndex((l, i) => i > 2 && i !== consoleLine && l.includes("http://") && !l.includes("demo is running"));
    expect(consoleLine).toBeGreaterThan(0);
    expect(consoleLine).toBeLessThan(firstOtherUrl);
  });

  it("names the API, the keys, the token and the simulator command for the same service", () => {
    const out = demoBanner(FACTS);
    expect(out).toContain(" API docs (Swagger UI)   http://127.0.0.1:3123/api/v1/docs");
    expect(out).toContain(" Super Admin             admin@example.com / generated-pw");
    expect(out).toContain("export KEY=fm_demo");
    expect(out).toContain("npm run simulate -- --url http://127.0.0.1:3123 --token et_demo --devices 20 --prefix more");
    expect(out).toContain("/api/v1/registries/git/reg-1/sync");
    expect(out).toContain("/api/v1/devices/dev-1/telemetry/latest");
  });

  it("counts the devices that join later in the total, and says what fails on purpose", () => {
    const out = demoBanner({ ...FACTS, lateDevices: 3, continuousDeployment: { id: "dep-1", name: "forwarder-everywhere" } });
    // the fleet health will read 53: the banner says so, not 50
    expect(out).toContain("organization 'demo', role operator, 53 devices (50 now, 3 more in a minute)");
    expect(out).toContain("'forwarder-everywhere' (telemetry-forwarder): devices enrolled later get it too");
    expect(out).toContain("demo-000013 reports errors all along; mqtt-broker 5.0.2");
    expect(out).toContain("is a broken build every device fails to install (its staged rollout pauses by itself); nothing else fails.");
  });

  it("without git and devices it says so and leaves their calls out", () => {
    const out = demoBanner({ ...FACTS, gitRegistry: null, deviceId: null });
    expect(out).toContain(" Git registry            none (git not available)");
    expect(out).not.toContain("/registries/git/");
    expect(out).not.toContain("/telemetry/latest");
    expect(out).toContain("sign in as operator@demo.example / demo-operator-password");
  });
});
