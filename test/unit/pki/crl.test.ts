import { beforeAll, describe, expect, it } from "vitest";
import {
  buildCrl,
  generateSelfSignedCa,
  issueDeviceCertificateFromPublicKey,
  PkiInputError,
  REVOCATION_REASON_CODES,
  REVOCATION_REASONS,
  type CrlEntryInput,
  type GeneratedCa,
} from "../../../src/lib/pki/index.js";
import { DAY, generateKeys, makeSelfSigned, NOW, publicKeyPem, subtle, x509 } from "./fixtures.js";

let ca: GeneratedCa;
let otherCa: GeneratedCa;

beforeAll(async () => {
  ca = await generateSelfSignedCa({ commonName: "CRL CA", validityDays: 3650, keyAlgorithm: "ECDSA-P256", now: NOW });
  otherCa = await generateSelfSignedCa({ commonName: "CRL CA", validityDays: 3650, keyAlgorithm: "ECDSA-P256", now: NOW });
});

/** Decodes the DER INTEGER inside the cRLNumber extension. */
function crlNumberOf(crl: x509.X509Crl): bigint {
  const ext = crl.getExtension("2.5.29.20");
  expect(ext).not.toBeNull();
  const bytes = new Uint8Array(ext!.value);
  expect(bytes[0]).toBe(0x02); // INTEGER
  expect(bytes[1]).toBe(bytes.length - 2);
  return BigInt(`0x${Buffer.from(bytes.subarray(2)).toString("hex") || "0"}`);
}

describe("REVOCATION_REASONS", () => {
  it("lists the seven user-facing reasons with their RFC 5280 codes", () => {
    expect(REVOCATION_REASONS).toEqual([
      "Key compromise",
      "CA compromise",
      "Affiliation changed",
      "Superseded",
      "Cessation of operation",
      "Certificate hold",
      "Other",
    ]);
    expect(REVOCATION_REASONS.map((r) => REVOCATION_REASON_CODES[r])).toEqual([1, 2, 3, 4, 5, 6, 0]);
  });
});

describe("buildCrl", () => {
  it("builds a signed v2 CRL with number, AKI and reasons", async () => {
    const device = await issueDeviceCertificateFromPublicKey({
      publicKeyPem: await publicKeyPem(await generateKeys("ECDSA-P256")),
      caCertificatePem: ca.certificatePem,
      caPrivateKeyPem: ca.privateKeyPem,
      deviceId: "revoked-device",
      validityDays: 30,
      now: NOW,
    });
    const entries: CrlEntryInput[] = REVOCATION_REASONS.map((reason, i) => ({
      serialNumber: i === 0 ? device.inspected.serialNumber : `0a:1b:${i.toString(16).padStart(2, "0")}`,
      revokedAt: new Date(NOW.getTime() - (i + 1) * DAY + 123), // milliseconds are dropped
      reason,
    }));
    entries.push({ serialNumber: "FF01", revokedAt: NOW, reason: "Superseded" }); // high bit set, upper case
    const thisUpdate = NOW;
    const nextUpdate = new Date(NOW.getTime() + 2 * DAY);

    const { der, pem } = await buildCrl({
      caCertificatePem: ca.certificatePem,
      caPrivateKeyPem: ca.privateKeyPem,
      entries,
      crlNumber: 4242,
      thisUpdate,
      nextUpdate,
    });

    expect(pem).toMatch(/^-----BEGIN X509 CRL-----\n[\s\S]+\n-----END X509 CRL-----\n$/);
    const crl = new x509.X509Crl(pem);
    expect(Buffer.from(crl.rawData)).toEqual(Buffer.from(der));
    expect(crl.version).toBe(1); // v2
    expect(crl.issuer).toBe("CN=CRL CA");
    expect(crl.thisUpdate).toEqual(thisUpdate);
    expect(crl.nextUpdate).toEqual(nextUpdate);
    expect(crl.signatureAlgorithm).toMatchObject({ name: "ECDSA", hash: { name: "SHA-256" } });

    // Signed by the CA's key, and by no other.
    const caCert = new x509.X509Certificate(ca.certificatePem);
    expect(await crl.verify({ publicKey: caCert })).toBe(true);
    expect(await crl.verify({ publicKey: await caCert.publicKey.export() })).toBe(true);
    expect(await crl.verify({ publicKey: new x509.X509Certificate(otherCa.certificatePem) })).toBe(false);

    expect(crlNumberOf(crl)).toBe(4242n);
    const caSki = caCert.getExtension(x509.SubjectKeyIdentifierExtension)!.keyId;
    expect(crl.getExtension(x509.AuthorityKeyIdentifierExtension)!.keyId).toBe(caSki);

    expect(crl.entries).toHaveLength(8);
    const bySerial = new Map(crl.entries.map((e) => [e.serialNumber, e]));
    entries.forEach((input) => {
      const serial = input.serialNumber.replaceAll(":", "").toLowerCase();
      const entry = bySerial.get(serial)!;
      expect(entry, serial).toBeDefined();
      expect(entry.revocationDate.getTime()).toBe(Math.floor(input.revokedAt.getTime() / 1000) * 1000);
      // "Other" is unspecified (0), which RFC 5280 encodes by leaving the reasonCode out.
      expect(entry.reason ?? 0).toBe(REVOCATION_REASON_CODES[input.reason]);
    });
    expect(bySerial.get(entries[6]!.serialNumber.replaceAll(":", ""))!.reason).toBeUndefined();
    expect(bySerial.get("0a1b01")!.reason).toBe(x509.X509CrlReason.cACompromise);

    // Lookup by certificate works, i.e. serials are encoded exactly like in the certificate.
    expect(crl.findRevoked(new x509.X509Certificate(device.certificatePem))?.reason).toBe(x509.X509CrlReason.keyCompromise);
  });

  it("builds an empty CRL with a default nextUpdate a week later", async () => {
    const { pem } = await buildCrl({ caCertificatePem: ca.certificatePem, caPrivateKeyPem: ca.privateKeyPem, entries: [], crlNumber: 0, thisUpdate: NOW });
    const crl = new x509.X509Crl(pem);
    expect(crl.entries).toHaveLength(0);
    expect(crl.nextUpdate).toEqual(new Date(NOW.getTime() + 7 * DAY));
    expect(crlNumberOf(crl)).toBe(0n);
    expect(await crl.verify({ publicKey: new x509.X509Certificate(ca.certificatePem) })).toBe(true);
  });

  it("signs with RSA CAs too, and encodes large CRL numbers", async () => {
    const rsaCa = await generateSelfSignedCa({ commonName: "RSA CRL CA", validityDays: 365, keyAlgorithm: "RSA-2048", now: NOW });
    const { der } = await buildCrl({
      caCertificatePem: rsaCa.certificatePem,
      caPrivateKeyPem: rsaCa.privateKeyPem,
      entries: [{ serialNumber: "01", revokedAt: NOW, reason: "Key compromise" }],
      crlNumber: 2 ** 40 + 128,
      thisUpdate: NOW,
    });
    const crl = new x509.X509Crl(der);
    expect(crl.signatureAlgorithm).toMatchObject({ name: "RSASSA-PKCS1-v1_5", hash: { name: "SHA-256" } });
    expect(await crl.verify({ publicKey: new x509.X509Certificate(rsaCa.certificatePem) })).toBe(true);
    expect(crlNumberOf(crl)).toBe(2n ** 40n + 128n);
  });

  it.each<[string, Record<string, unknown>, RegExp]>([
    ["a negative CRL number", { crlNumber: -1 }, /crlNumber must be a non-negative integer/],
    ["a fractional CRL number", { crlNumber: 1.5 }, /crlNumber must be a non-negative integer/],
    ["nextUpdate before thisUpdate", { nextUpdate: new Date(NOW.getTime() - DAY) }, /nextUpdate must be a valid date after thisUpdate/],
    ["a non-hex serial", { entries: [{ serialNumber: "xyz", revokedAt: NOW, reason: "Other" }] }, /entries\[0\]\.serialNumber must be a hexadecimal/],
    ["an empty serial", { entries: [{ serialNumber: "", revokedAt: NOW, reason: "Other" }] }, /entries\[0\]\.serialNumber/],
    [
      "a duplicate serial",
      { entries: [{ serialNumber: "00ab", revokedAt: NOW, reason: "Other" }, { serialNumber: "AB", revokedAt: NOW, reason: "Other" }] },
      /serial number ab is listed twice/,
    ],
    ["an unknown reason", { entries: [{ serialNumber: "01", revokedAt: NOW, reason: "Bored" }] }, /entries\[0\]\.reason must be one of/],
    ["an invalid date", { entries: [{ serialNumber: "01", revokedAt: new Date("nope"), reason: "Other" }] }, /revokedAt must be a valid Date/],
  ])("refuses %s", async (_name, override, message) => {
    const params = { caCertificatePem: ca.certificatePem, caPrivateKeyPem: ca.privateKeyPem, entries: [], crlNumber: 1, thisUpdate: NOW, ...override };
    const promise = buildCrl(params as Parameters<typeof buildCrl>[0]);
    await expect(promise).rejects.toBeInstanceOf(PkiInputError);
    await expect(promise).rejects.toThrow(message);
  });

  it("refuses a CA key that does not match the CA certificate", async () => {
    const promise = buildCrl({ caCertificatePem: ca.certificatePem, caPrivateKeyPem: otherCa.privateKeyPem, entries: [], crlNumber: 1 });
    await expect(promise).rejects.toThrow(new PkiInputError("CA private key does not match the CA certificate"));
  });

  it("refuses a CA whose keyUsage does not allow CRL signing", async () => {
    const { pem, keys } = await makeSelfSigned(
      [
        new x509.BasicConstraintsExtension(true, undefined, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign, true),
      ],
      "CN=No CRLs",
    );
    const keyPem = x509.PemConverter.encode(await subtle.exportKey("pkcs8", keys.privateKey), "PRIVATE KEY");
    const promise = buildCrl({ caCertificatePem: pem, caPrivateKeyPem: keyPem, entries: [], crlNumber: 1, thisUpdate: NOW });
    await expect(promise).rejects.toThrow(/keyUsage lacks cRLSign/);
  });
});
