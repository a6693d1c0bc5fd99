// When the agent renews its certificate (agent/src/agent.ts, renewalDueAt; the heartbeat loop
// renews with a new key once it is due): two thirds into the certificate's validity, whatever its
// length, so that a renewal the service refuses or cannot answer has a third of the validity to
// succeed before the certificate expires. The renewal call itself is test/http/agent/agent.test.ts
// ("renews the certificate with a new key").
import { describe, expect, it } from "vitest";
import { renewalDueAt } from "../../../agent/src/agent.js";
import { subtle, x509 } from "../../../agent/src/core/pki.js";

async function certificate(notBefore: string, notAfter: string): Promise<string> {
  const keys = await subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, true, ["sign", "verify"]);
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: "01", name: "CN=device", notBefore: new Date(notBefore), notAfter: new Date(notAfter), keys, signingAlgorithm: { name: "ECDSA", hash: "SHA-256" },
  });
  return cert.toString("pem");
}

describe("certificate renewal", () => {
  it("is due two thirds into the validity: day 240 of a 360-day certificate, hour 16 of a one-day one", async () => {
    expect(new Date(renewalDueAt(await certificate("2026-01-01T00:00:00Z", "2026-12-27T00:00:00Z"))).toISOString()).toBe("2026-08-29T00:00:00.000Z");
    expect(new Date(renewalDueAt(await certificate("2026-11-28T00:00:00Z", "2026-11-29T00:00:00Z"))).toISOString()).toBe("2026-11-28T16:00:00.000Z");
  });

  it("is due before the certificate expires, never after", async () => {
    const pem = await certificate("2026-11-01T00:00:00Z", "2027-11-01T00:00:00Z");
    expect(renewalDueAt(pem)).toBeLessThan(Date.parse("2027-11-01T00:00:00Z"));
    expect(renewalDueAt(pem)).toBeGreaterThan(Date.parse("2026-11-01T00:00:00Z"));
  });
});
