import { describe, expect, it } from "vitest";
import { generateSelfSignedCa, parseCaUpload, PkiInputError } from "../../../src/lib/pki/index.js";
import { caStateOf, expiryOf, movesOf, uploadFieldOf, type CaCertificate } from "./ca-facts";

const NOW = Date.parse("2026-06-01T12:00:00Z");
const DAY = 86_400_000;
const at = (ms: number) => new Date(NOW + ms).toISOString();

const ca = (over: Partial<CaCertificate> = {}): CaCertificate => ({
  id: "00000000-0000-4000-8000-000000000001", name: "Root", fingerprint: "ab", isRoot: true, isDefault: false,
  notBefore: at(-DAY), notAfter: at(365 * DAY), retiredAt: null, createdAt: at(-DAY), subject: "CN=Root", issuer: "CN=Root",
  serialNumber: "01", keyAlgorithm: "ECDSA P-256", signatureAlgorithm: "ecdsa-with-SHA256", subjectAltNames: [], certificate: "",
  hasPrivateKey: true, origin: "generated", renewedFromId: null, ...over,
});

describe("expiry as time left", () => {
  it.each([
    [10 * 365 * DAY, "10 years left", "ok"],
    [400 * DAY, "13 months left", "ok"],
    [45 * DAY, "45 days left", "ok"],
    [30 * DAY, "30 days left", "ok"],
    [30 * DAY - 1, "29 days left", "warning"],
    [36 * 3_600_000, "36 hours left", "warning"],
    [59 * 60_000, "59 minutes left", "warning"],
    [1_000, "1 minute left", "warning"],
    [0, "expired 1 minute ago", "expired"],
    [-3 * DAY, "expired 3 days ago", "expired"],
  ])("%d ms before notAfter reads %s (%s)", (left, text, tone) => {
    expect(expiryOf(at(left), NOW)).toEqual({ text, tone });
  });
});

describe("state and moves", () => {
  it("names the state, retired before expired", () => {
    expect(caStateOf(ca({ isDefault: true }), NOW)).toBe("default");
    expect(caStateOf(ca(), NOW)).toBe("in service");
    expect(caStateOf(ca({ retiredAt: at(-1), notAfter: at(-DAY) }), NOW)).toBe("retired");
    expect(caStateOf(ca({ notAfter: at(-1) }), NOW)).toBe("expired");
    expect(caStateOf(ca({ notBefore: at(DAY) }), NOW)).toBe("not yet valid");
    expect(caStateOf(ca({ hasPrivateKey: false }), NOW)).toBe("trust only");
  });

  it("offers only what the service accepts", () => {
    expect(movesOf(ca(), NOW)).toEqual({ setDefault: true, renew: true, retire: true, delete: true, crl: true });
    expect(movesOf(ca({ isDefault: true }), NOW)).toMatchObject({ setDefault: false, delete: false, renew: true });
    expect(movesOf(ca({ retiredAt: at(-1) }), NOW)).toMatchObject({ setDefault: false, renew: false, retire: false, delete: true });
    expect(movesOf(ca({ hasPrivateKey: false }), NOW)).toMatchObject({ setDefault: false, renew: false, crl: false });
    expect(movesOf(ca({ isRoot: false }), NOW)).toMatchObject({ renew: false, setDefault: true });
    // An expired CA is renewed (that is why one renews), but cannot be the default.
    expect(movesOf(ca({ notAfter: at(-1) }), NOW)).toMatchObject({ setDefault: false, renew: true });
  });
});

describe("the upload field a refusal is about", () => {
  /** The message the service's PKI library refuses this upload with. */
  const refusal = (certificatePem: string, privateKeyPem?: string) => {
    try {
      parseCaUpload({ certificatePem, privateKeyPem });
    } catch (err) {
      if (err instanceof PkiInputError) return err.message;
      throw err;
    }
    throw new Error("accepted");
  };

  it("maps the library's own refusals to the field they are about", async () => {
    const root = await generateSelfSignedCa({ commonName: "Root", validityDays: 30, keyAlgorithm: "ECDSA-P256" });
    const other = await generateSelfSignedCa({ commonName: "Other", validityDays: 30, keyAlgorithm: "ECDSA-P256" });
    expect(uploadFieldOf(refusal("hello"))).toBe("certificatePem");
    expect(uploadFieldOf(refusal("-----BEGIN CERTIFICATE-----\nnot base64!\n-----END CERTIFICATE-----\n"))).toBe("certificatePem");
    expect(uploadFieldOf(refusal(root.certificatePem + other.certificatePem))).toBe("certificatePem");
    expect(uploadFieldOf(refusal(root.certificatePem, "not a key"))).toBe("privateKeyPem");
    expect(uploadFieldOf(refusal(root.certificatePem, other.privateKeyPem))).toBe("privateKeyPem");
    expect(uploadFieldOf(refusal(root.certificatePem, root.certificatePem))).toBe("privateKeyPem");
  });

  it("follows the input validation's path and the name conflict", () => {
    expect(uploadFieldOf("Too small", ["name"])).toBe("name");
    expect(uploadFieldOf("Required", ["certificatePem"])).toBe("certificatePem");
    expect(uploadFieldOf('A CA certificate named "Root" already exists')).toBe("name");
    expect(uploadFieldOf('This certificate is already in the organization as "Root"')).toBe("certificatePem");
    expect(uploadFieldOf("The database is unavailable; try again shortly")).toBeNull();
  });
});
