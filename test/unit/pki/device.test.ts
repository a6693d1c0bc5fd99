import { createHash, X509Certificate as NodeX509Certificate } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import {
  generateSelfSignedCa,
  inspectCertificate,
  issueDeviceCertificate,
  issueDeviceCertificateFromPublicKey,
  PkiInputError,
  type GeneratedCa,
} from "../../../src/lib/pki/index.js";
import { DAY, generateKeys, makeCsr, NOW, pemToDer, publicKeyPem, subtle, x509, type DeviceKeyType } from "./fixtures.js";

const SKEW = 5 * 60 * 1000;
let ecCa: GeneratedCa;
let rsaCa: GeneratedCa;

beforeAll(async () => {
  ecCa = await generateSelfSignedCa({ commonName: "Fleet Devices CA", validityDays: 3650, keyAlgorithm: "ECDSA-P256", now: NOW });
  rsaCa = await generateSelfSignedCa({ commonName: "Fleet RSA CA", validityDays: 3650, keyAlgorithm: "RSA-2048", now: NOW });
});

function issueParams(ca: GeneratedCa, csrPem: string, deviceId = "device-0001") {
  return { csrPem, caCertificatePem: ca.certificatePem, caPrivateKeyPem: ca.privateKeyPem, deviceId, validityDays: 365, now: NOW };
}

async function expectRefusal(promise: Promise<unknown>, message: string | RegExp) {
  await expect(promise).rejects.toBeInstanceOf(PkiInputError);
  await expect(promise).rejects.toThrow(message);
}

describe("issueDeviceCertificate", () => {
  it.each<[DeviceKeyType, string, () => GeneratedCa]>([
    ["ECDSA-P256", "ECDSA P-256", () => ecCa],
    ["ECDSA-P384", "ECDSA P-384", () => ecCa],
    ["Ed25519", "Ed25519", () => ecCa],
    ["RSA-2048", "RSA 2048", () => ecCa],
    ["ECDSA-P256", "ECDSA P-256", () => rsaCa],
  ])("issues a certificate for a %s CSR (key %s) that chains to the CA", async (keyType, keyLabel, getCa) => {
    const ca = getCa();
    const { keys, csrPem } = await makeCsr(keyType);
    const { certificatePem, inspected } = await issueDeviceCertificate(issueParams(ca, csrPem));

    expect(inspected).toEqual(inspectCertificate(certificatePem));
    expect(inspected.subject).toBe("CN=device-0001");
    expect(inspected.issuer).toBe(ca.inspected.subject);
    expect(inspected.keyAlgorithm).toBe(keyLabel);
    expect(inspected.signatureAlgorithm).toBe(ca === rsaCa ? "sha256WithRSAEncryption" : "ecdsa-with-SHA256");
    expect(inspected.isCa).toBe(false);
    expect(inspected.isSelfSigned).toBe(false);
    expect(inspected.subjectAltNames).toEqual([]); // the CSR's SAN request is ignored
    expect(inspected.notBefore.getTime()).toBe(NOW.getTime() - SKEW);
    expect(inspected.notAfter.getTime()).toBe(NOW.getTime() + 365 * DAY);
    expect(inspected.serialNumber).toMatch(/^[4-7][0-9a-f]{31}$/);

    // Chains to the CA, per x509's chain builder and signature check...
    const cert = new x509.X509Certificate(certificatePem);
    const caCert = new x509.X509Certificate(ca.certificatePem);
    const chain = await new x509.X509ChainBuilder({ certificates: [caCert] }).build(cert);
    expect(chain.map((c) => c.subject)).toEqual(["CN=device-0001", ca.inspected.subject]);
    expect(await cert.verify({ publicKey: caCert.publicKey, date: NOW })).toBe(true);
    // ... and per OpenSSL (name, key identifiers and key usage).
    const node = new NodeX509Certificate(certificatePem);
    const nodeCa = new NodeX509Certificate(ca.certificatePem);
    expect(node.checkIssued(nodeCa)).toBe(true);
    expect(node.verify(nodeCa.publicKey)).toBe(true);

    // The certified key is the CSR's key.
    const spki = Buffer.from(await subtle.exportKey("spki", keys.publicKey));
    expect(Buffer.from(cert.publicKey.rawData).equals(spki)).toBe(true);

    // Extensions.
    const bc = cert.getExtension(x509.BasicConstraintsExtension)!;
    expect([bc.ca, bc.critical]).toEqual([false, true]);
    const ku = cert.getExtension(x509.KeyUsagesExtension)!;
    expect(ku.critical).toBe(true);
    expect(ku.usages).toBe(
      keyType.startsWith("RSA")
        ? x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment
        : x509.KeyUsageFlags.digitalSignature,
    );
    expect(cert.getExtension(x509.ExtendedKeyUsageExtension)!.usages).toEqual([x509.ExtendedKeyUsage.clientAuth]);
    expect(node.keyUsage).toEqual(["1.3.6.1.5.5.7.3.2"]); // Node calls the EKU list "keyUsage"
    const caSki = caCert.getExtension(x509.SubjectKeyIdentifierExtension)!.keyId;
    expect(cert.getExtension(x509.AuthorityKeyIdentifierExtension)!.keyId).toBe(caSki);
    expect(cert.getExtension(x509.SubjectKeyIdentifierExtension)!.keyId).toBe(
      Buffer.from(await cert.publicKey.getKeyIdentifier()).toString("hex"),
    );
    expect(cert.getExtension(x509.SubjectAlternativeNameExtension)).toBeNull();
  });

  it("never lets the device certificate outlive the CA", async () => {
    const shortCa = await generateSelfSignedCa({ commonName: "Short CA", validityDays: 10, keyAlgorithm: "ECDSA-P256", now: NOW });
    const { csrPem } = await makeCsr("ECDSA-P256");
    const { inspected } = await issueDeviceCertificate({ ...issueParams(shortCa, csrPem), validityDays: 365 });
    expect(inspected.notAfter).toEqual(shortCa.inspected.notAfter);
  });

  it("never starts before the CA", async () => {
    const { csrPem } = await makeCsr("ECDSA-P256");
    // Two minutes after the CA's notBefore: backdating by 5 minutes would predate the CA.
    const now = new Date(ecCa.inspected.notBefore.getTime() + 2 * 60 * 1000);
    const { inspected } = await issueDeviceCertificate({ ...issueParams(ecCa, csrPem), now });
    expect(inspected.notBefore).toEqual(ecCa.inspected.notBefore);
  });

  it("refuses a tampered CSR", async () => {
    const { csrPem } = await makeCsr("ECDSA-P256", "CN=device-0001");
    const der = Buffer.from(pemToDer(csrPem));
    const at = der.indexOf("device-0001");
    der.write("device-0002", at); // still a well-formed CSR, but no longer the one that was signed
    const tampered = x509.PemConverter.encode(der, "CERTIFICATE REQUEST");
    expect(new x509.Pkcs10CertificateRequest(tampered).subject).toBe("CN=device-0002");
    await expectRefusal(issueDeviceCertificate(issueParams(ecCa, tampered)), "CSR signature is invalid");
  });

  it("refuses a CSR with a corrupted signature", async () => {
    const { csrPem } = await makeCsr("Ed25519");
    const der = Buffer.from(pemToDer(csrPem));
    der.writeUInt8(der.readUInt8(der.length - 1) ^ 0xff, der.length - 1); // Ed25519 signature bytes end the DER
    const tampered = x509.PemConverter.encode(der, "CERTIFICATE REQUEST");
    await expectRefusal(issueDeviceCertificate(issueParams(ecCa, tampered)), "CSR signature is invalid");
  });

  it.each<[DeviceKeyType, RegExp]>([
    ["RSA-1024", /device key type RSA 1024 is not accepted/],
    ["ECDSA-P521", /device key type ECDSA P-521 is not accepted/],
  ])("refuses a %s key", async (keyType, message) => {
    const { csrPem } = await makeCsr(keyType);
    await expectRefusal(issueDeviceCertificate(issueParams(ecCa, csrPem)), message);
  });

  it.each<[string, () => string, RegExp]>([
    ["garbage", () => "garbage", /^not a PEM certificate request/],
    ["a certificate", () => ecCa.certificatePem, /must be a PEM CERTIFICATE REQUEST, found a PEM CERTIFICATE/],
    ["a corrupt CSR", () => "-----BEGIN CERTIFICATE REQUEST-----\nMAA=\n-----END CERTIFICATE REQUEST-----\n", /could not be parsed as PKCS#10/],
  ])("refuses %s as CSR", async (_name, csr, message) => {
    await expectRefusal(issueDeviceCertificate(issueParams(ecCa, csr())), message);
  });

  it.each<[unknown, RegExp]>([
    ["", /deviceId is required/],
    ["x".repeat(65), /deviceId must be at most 64 characters/],
    ["bad\nid", /control characters/],
  ])("refuses device id %j", async (deviceId, message) => {
    const { csrPem } = await makeCsr("ECDSA-P256");
    await expectRefusal(issueDeviceCertificate(issueParams(ecCa, csrPem, deviceId as string)), message);
  });

  it("keeps a device id with DN special characters inside the CN", async () => {
    const { csrPem } = await makeCsr("ECDSA-P256");
    const { certificatePem } = await issueDeviceCertificate(issueParams(ecCa, csrPem, "dev,O=Evil+CN=x"));
    const cert = new x509.X509Certificate(certificatePem);
    expect(cert.subjectName.getField("CN")).toEqual(["dev,O=Evil+CN=x"]);
    expect(cert.subjectName.getField("O")).toEqual([]);
  });

  it("refuses to issue from an expired CA", async () => {
    const { csrPem } = await makeCsr("ECDSA-P256");
    const later = new Date(NOW.getTime() + 3651 * DAY);
    await expectRefusal(issueDeviceCertificate({ ...issueParams(ecCa, csrPem), now: later }), /^CA certificate has expired/);
  });

  it("refuses a CA key that does not match the CA certificate", async () => {
    const { csrPem } = await makeCsr("ECDSA-P256");
    const params = { ...issueParams(ecCa, csrPem), caPrivateKeyPem: rsaCa.privateKeyPem };
    await expectRefusal(issueDeviceCertificate(params), "CA private key does not match the CA certificate");
  });

  it("refuses a non-CA certificate as issuer", async () => {
    const { csrPem } = await makeCsr("ECDSA-P256");
    const leaf = await issueDeviceCertificate(issueParams(ecCa, csrPem));
    const params = { ...issueParams(ecCa, csrPem), caCertificatePem: leaf.certificatePem };
    await expectRefusal(issueDeviceCertificate(params), "CA certificate is not a CA (basicConstraints cA is false)");
  });
});

describe("issueDeviceCertificateFromPublicKey", () => {
  it("issues for a PUBLIC KEY PEM", async () => {
    const keys = await generateKeys("Ed25519");
    const { certificatePem, inspected } = await issueDeviceCertificateFromPublicKey({
      publicKeyPem: await publicKeyPem(keys),
      caCertificatePem: ecCa.certificatePem,
      caPrivateKeyPem: ecCa.privateKeyPem,
      deviceId: "device-7",
      validityDays: 90,
      now: NOW,
    });
    expect(inspected.subject).toBe("CN=device-7");
    expect(inspected.keyAlgorithm).toBe("Ed25519");
    const cert = new x509.X509Certificate(certificatePem);
    expect(Buffer.from(cert.publicKey.rawData)).toEqual(Buffer.from(await subtle.exportKey("spki", keys.publicKey)));
  });

  it("renews from the previous certificate, reusing its key", async () => {
    const { csrPem } = await makeCsr("RSA-2048");
    const first = await issueDeviceCertificate(issueParams(ecCa, csrPem, "device-9"));
    const later = new Date(NOW.getTime() + 300 * DAY);
    const renewed = await issueDeviceCertificateFromPublicKey({
      publicKeyPem: first.certificatePem,
      caCertificatePem: ecCa.certificatePem,
      caPrivateKeyPem: ecCa.privateKeyPem,
      deviceId: "device-9",
      validityDays: 365,
      now: later,
    });
    const spki = (pem: string) => createHash("sha256").update(Buffer.from(new x509.X509Certificate(pem).publicKey.rawData)).digest("hex");
    expect(spki(renewed.certificatePem)).toBe(spki(first.certificatePem));
    expect(renewed.inspected.serialNumber).not.toBe(first.inspected.serialNumber);
    expect(renewed.inspected.notAfter.getTime()).toBe(later.getTime() + 365 * DAY);
    expect(renewed.inspected.keyAlgorithm).toBe("RSA 2048");
  });

  it.each<[string, () => string, RegExp]>([
    ["a private key", () => ecCa.privateKeyPem, /must be a PEM PUBLIC KEY or CERTIFICATE, found a PEM PRIVATE KEY/],
    ["garbage", () => "garbage", /^not a PEM public key/],
    ["a corrupt public key", () => "-----BEGIN PUBLIC KEY-----\nMAA=\n-----END PUBLIC KEY-----\n", /public key could not be parsed/],
  ])("refuses %s", async (_name, publicKey, message) => {
    const promise = issueDeviceCertificateFromPublicKey({
      publicKeyPem: publicKey(),
      caCertificatePem: ecCa.certificatePem,
      caPrivateKeyPem: ecCa.privateKeyPem,
      deviceId: "device-x",
      validityDays: 1,
      now: NOW,
    });
    await expectRefusal(promise, message);
  });
});
