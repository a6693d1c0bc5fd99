// Device certificates live as long as DEVICE_CERT_VALIDITY_DAYS says, at enrollment and renewal.
import { afterAll, beforeAll, expect, it } from "vitest";
import { inspectCertificate } from "../../../src/lib/pki/index.js";
import { createHarness, type Harness } from "../../support/harness.js";
import { createEnrollmentToken, enroll, ensureCa } from "./fleet-support.js";

let h: Harness;
beforeAll(async () => {
  h = await createHarness({ DEVICE_CERT_VALIDITY_DAYS: "30", JOBS_ENABLED: "false" });
});
afterAll(() => h?.close());

const DAY = 86_400_000;

it("issues enrollment certificates valid for the configured number of days", async () => {
  const tenant = await h.createTenant("Lifetime Co");
  await ensureCa(h, tenant.key);
  const token = await createEnrollmentToken(h, tenant.key);
  const device = await enroll(h, token.token);
  const cert = inspectCertificate(device.certificate);
  const days = (cert.notAfter.getTime() - Date.now()) / DAY;
  expect(days).toBeGreaterThan(29.9);
  expect(days).toBeLessThan(30.1);
});
