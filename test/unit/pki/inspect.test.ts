import { X509Certificate as NodeX509Certificate } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import {
  fingerprintOfDer,
  generateSelfSignedCa,
  inspectCertificate,
  issueDeviceCertificateFromPublicKey,
  PkiInputError,
  verifySignedBy,
  type GeneratedCa,
} from "../../../src/lib/pki/index.js";
import { generateKeys, importSigningKey, makeSelfSigned, NOW, pemToDer, publicKeyPem, sha256Hex, x509 } from "./fixtures.js";

let ca: GeneratedCa;
let otherCa: GeneratedCa;
let devicePem: string;

beforeAll(async () => {
  ca = await generateSelfSignedCa({ commonName: "Inspect CA", validityDays: 365, keyAlgorithm: "ECDSA-P256", now: NOW });
  otherCa = await generateSelfSignedCa({ commonName: "Inspect CA", validityDays: 365, keyAlgorithm: "ECDSA-P256", now: NOW });
  const device = await issueDeviceCertificateFromPublicKey({
    publicKeyPem: await publicKeyPem(await generateKeys("Ed25519")),
    caCertificatePem: ca.certificatePem,
    caPrivateKeyPem: ca.privateKeyPem,
    deviceId: "device-42",
    validityDays: 30,
    now: NOW,
  });
  devicePem = device.certificatePem;
});

function expectInputError(fn: () => unknown, message: string | RegExp) {
  let error: unknown;
  try {
    fn();
  } catch (e) {
    error = e;
  }
  expect(error).toBeInstanceOf(PkiInputError);
  expect((error as Error).message).toMatch(message);
}

describe("inspectCertificate", () => {
  it("describes a device certificate", () => {
    const info = inspectCertificate(devicePem);
    expect(info.subject).toBe("CN=device-42");
    expect(info.issuer).toBe("CN=Inspect CA");
    expect(info.keyAlgorithm).toBe("Ed25519");
    expect(info.signatureAlgorithm).toBe("ecdsa-with-SHA256");
    expect(info.isCa).toBe(false);
    expect(info.isSelfSigned).toBe(false);
  });

  it("lists subject alternative names in OpenSSL style", async () => {
    const { pem } = await makeSelfSigned([
      new x509.SubjectAlternativeNameExtension([
        { type: "dns", value: "device.example.com" },
        { type: "ip", value: "192.168.1.10" },
        { type: "ip", value: "2001:db8::1" },
        { type: "url", value: "urn:fleet:device:42" },
        { type: "email", value: "ops@example.com" },
      ]),
    ]);
    const info = inspectCertificate(pem);
    expect(info.subjectAltNames).toEqual([
      "DNS:device.example.com",
      "IP:192.168.1.10",
      expect.stringMatching(/^IP:2001:0?db8:/),
      "URI:urn:fleet:device:42",
      "email:ops@example.com",
    ]);
    expect(info.isCa).toBe(false); // no basicConstraints at all
    expect(info.isSelfSigned).toBe(true);
  });

  it("computes the SHA-256 fingerprint of the DER", () => {
    const der = pemToDer(devicePem);
    const info = inspectCertificate(devicePem);
    expect(info.fingerprint).toBe(sha256Hex(der));
    expect(fingerprintOfDer(der)).toBe(info.fingerprint);
    expect(fingerprintOfDer(new Uint8Array(der))).toBe(info.fingerprint);
    expect(info.fingerprint).toMatch(/^[0-9a-f]{64}$/);
  });

  it("normalizes PEM formatting (CRLF, indentation, surrounding text)", () => {
    const messy = `subject=CN = device-42\r\n  ${devicePem.trim().replace(/\n/g, "\r\n   ")}\r\n\r\ntrailing text`;
    const info = inspectCertificate(messy);
    expect(info.certificatePem).toBe(devicePem);
    expect(info.certificatePem.endsWith("-----END CERTIFICATE-----\n")).toBe(true);
  });

  it("reports serial numbers as lowercase hex without sign padding", async () => {
    const keys = await generateKeys("ECDSA-P256");
    const cert = await x509.X509CertificateGenerator.createSelfSigned({
      serialNumber: "00ff0a",
      name: "CN=Serial",
      keys: keys,
      signingAlgorithm: { name: "ECDSA", hash: "SHA-256" },
    });
    const info = inspectCertificate(cert.toString("pem"));
    expect(info.serialNumber).toBe("ff0a");
    expect(new NodeX509Certificate(info.certificatePem).serialNumber.toLowerCase()).toBe("ff0a");
  });

  it("does not call a certificate self-signed when only the names match", async () => {
    // Subject == issuer, but signed by another CA's key: self-issued, not self-signed.
    const keys = await generateKeys("ECDSA-P256");
    const signer = await importSigningKey(otherCa.privateKeyPem);
    const cert = await x509.X509CertificateGenerator.create({
      subject: "CN=Look-alike",
      issuer: "CN=Look-alike",
      publicKey: keys.publicKey,
      signingKey: signer.key,
      signingAlgorithm: signer.alg,
    });
    const info = inspectCertificate(cert.toString("pem"));
    expect(info.subject).toBe(info.issuer);
    expect(info.isSelfSigned).toBe(false);
  });

  it("detects a tampered self-signed certificate", () => {
    const der = new Uint8Array(pemToDer(ca.certificatePem));
    // Flip a byte inside the validity period: still parses, signature breaks.
    const marker = Buffer.from(der).indexOf(Buffer.from("250601", "ascii"));
    expect(marker).toBeGreaterThan(0);
    der[marker + 1] = "6".charCodeAt(0);
    const tampered = x509.PemConverter.encode(der, "CERTIFICATE");
    const info = inspectCertificate(tampered);
    expect(info.subject).toBe(info.issuer);
    expect(info.isSelfSigned).toBe(false);
  });

  it.each<[string, unknown, RegExp]>([
    ["empty input", "", /is empty/],
    ["not a string", 42, /is empty/],
    ["garbage", "hello world", /not a PEM certificate/],
    ["bad base64", "-----BEGIN CERTIFICATE-----\n@@@@\n-----END CERTIFICATE-----\n", /invalid base64/],
    ["truncated block", "-----BEGIN CERTIFICATE-----\nMIIB\n", /truncated or malformed/],
    ["valid base64 but not a certificate", "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n", /could not be parsed/],
    ["a private key", "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n", /must be a PEM CERTIFICATE, found a PEM PRIVATE KEY/],
    ["huge input", "A".repeat(300_000), /too large/],
  ])("throws PkiInputError for %s", (_name, input, message) => {
    expectInputError(() => inspectCertificate(input as string), message);
  });

  it("refuses several certificates where one is expected", () => {
    expectInputError(() => inspectCertificate(devicePem + ca.certificatePem), /exactly one certificate, found 2/);
  });
});

describe("verifySignedBy", () => {
  it("is true for the issuing CA only", async () => {
    expect(await verifySignedBy(devicePem, ca.certificatePem)).toBe(true);
    expect(await verifySignedBy(devicePem, otherCa.certificatePem)).toBe(false);
    expect(await verifySignedBy(ca.certificatePem, ca.certificatePem)).toBe(true);
    expect(await verifySignedBy(ca.certificatePem, devicePem)).toBe(false);
  });

  it("rejects malformed input with PkiInputError", async () => {
    await expect(verifySignedBy("nope", ca.certificatePem)).rejects.toBeInstanceOf(PkiInputError);
  });
});
