import { X509Certificate as NodeX509Certificate, createPrivateKey } from "node:crypto";
import { describe, expect, it } from "vitest";
import {
  generateSelfSignedCa,
  inspectCertificate,
  issueDeviceCertificateFromPublicKey,
  PkiInputError,
  renewCa,
  verifySignedBy,
  type KeyAlgorithm,
} from "../../../src/lib/pki/index.js";
import { DAY, generateKeys, makeIntermediate, NOW, pemToDer, publicKeyPem, sha256Hex, x509 } from "./fixtures.js";

const EXPECTED: Record<KeyAlgorithm, { keyAlgorithm: string; signatureAlgorithm: string }> = {
  "ECDSA-P256": { keyAlgorithm: "ECDSA P-256", signatureAlgorithm: "ecdsa-with-SHA256" },
  "RSA-2048": { keyAlgorithm: "RSA 2048", signatureAlgorithm: "sha256WithRSAEncryption" },
  "RSA-4096": { keyAlgorithm: "RSA 4096", signatureAlgorithm: "sha256WithRSAEncryption" },
};

describe("generateSelfSignedCa", () => {
  it.each(Object.keys(EXPECTED) as KeyAlgorithm[])(
    "creates a %s root CA with the expected fields",
    async (keyAlgorithm) => {
      const ca = await generateSelfSignedCa({ commonName: "Fleet Root CA", validityDays: 3650, keyAlgorithm, now: NOW });
      const info = inspectCertificate(ca.certificatePem);

      expect(info).toEqual(ca.inspected);
      expect(info.subject).toBe("CN=Fleet Root CA");
      expect(info.issuer).toBe("CN=Fleet Root CA");
      expect(info.keyAlgorithm).toBe(EXPECTED[keyAlgorithm].keyAlgorithm);
      expect(info.signatureAlgorithm).toBe(EXPECTED[keyAlgorithm].signatureAlgorithm);
      expect(info.isCa).toBe(true);
      expect(info.isSelfSigned).toBe(true);
      expect(info.subjectAltNames).toEqual([]);
      // Backdated 5 minutes for clock skew; exactly validityDays after "now".
      expect(info.notBefore.toISOString()).toBe("2025-06-01T11:55:00.000Z");
      expect(info.notAfter.getTime()).toBe(NOW.getTime() + 3650 * DAY);
      // 16 random bytes, positive, no sign padding.
      expect(info.serialNumber).toMatch(/^[4-7][0-9a-f]{31}$/);
      // Fingerprint = SHA-256 of the DER, computed independently.
      expect(info.fingerprint).toBe(sha256Hex(pemToDer(ca.certificatePem)));
      expect(info.certificatePem).toBe(ca.certificatePem);

      // The private key is PKCS#8 and belongs to the certificate (checked by OpenSSL).
      expect(ca.privateKeyPem).toMatch(/^-----BEGIN PRIVATE KEY-----\n/);
      const node = new NodeX509Certificate(ca.certificatePem);
      expect(node.checkPrivateKey(createPrivateKey(ca.privateKeyPem))).toBe(true);
      expect(node.ca).toBe(true);
      expect(node.verify(node.publicKey)).toBe(true);
      expect(node.fingerprint256.replaceAll(":", "").toLowerCase()).toBe(info.fingerprint);
      expect(node.serialNumber.toLowerCase()).toBe(info.serialNumber);
    },
    60_000,
  );

  it("sets critical basicConstraints and keyUsage, and key identifiers", async () => {
    const ca = await generateSelfSignedCa({ commonName: "Ext CA", validityDays: 30, keyAlgorithm: "ECDSA-P256", now: NOW });
    const cert = new x509.X509Certificate(ca.certificatePem);

    const bc = cert.getExtension(x509.BasicConstraintsExtension)!;
    expect(bc.ca).toBe(true);
    expect(bc.critical).toBe(true);
    expect(bc.pathLength).toBeUndefined();

    const ku = cert.getExtension(x509.KeyUsagesExtension)!;
    expect(ku.critical).toBe(true);
    expect(ku.usages).toBe(
      x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign | x509.KeyUsageFlags.digitalSignature,
    );

    const ski = cert.getExtension(x509.SubjectKeyIdentifierExtension)!;
    const expectedKeyId = Buffer.from(await cert.publicKey.getKeyIdentifier()).toString("hex");
    expect(ski.keyId).toBe(expectedKeyId);
    expect(cert.getExtension(x509.AuthorityKeyIdentifierExtension)!.keyId).toBe(expectedKeyId);
    expect(cert.signatureAlgorithm).toMatchObject({ name: "ECDSA", hash: { name: "SHA-256" } });
  });

  it("gives every CA a different serial", async () => {
    const params = { commonName: "CA", validityDays: 1, keyAlgorithm: "ECDSA-P256" as const, now: NOW };
    const [a, b] = await Promise.all([generateSelfSignedCa(params), generateSelfSignedCa(params)]);
    expect(a.inspected.serialNumber).not.toBe(b.inspected.serialNumber);
  });

  it("encodes special characters of the common name safely", async () => {
    const ca = await generateSelfSignedCa({ commonName: "ACME, Inc. CA=1", validityDays: 1, keyAlgorithm: "ECDSA-P256", now: NOW });
    const cert = new x509.X509Certificate(ca.certificatePem);
    expect(cert.subjectName.getField("CN")).toEqual(["ACME, Inc. CA=1"]);
    expect(cert.subjectName.toJSON()).toHaveLength(1); // one RDN: no injected attributes
  });

  it.each([
    [{ commonName: "" }, "commonName is required"],
    [{ commonName: "x".repeat(65) }, "commonName must be at most 64 characters"],
    [{ validityDays: 0 }, "validityDays must be an integer"],
    [{ validityDays: 1.5 }, "validityDays must be an integer"],
    [{ keyAlgorithm: "DSA-1024" }, 'unsupported key algorithm "DSA-1024"'],
  ])("refuses bad parameters %o", async (override, message) => {
    const params = { commonName: "CA", validityDays: 10, keyAlgorithm: "ECDSA-P256", now: NOW, ...override };
    const promise = generateSelfSignedCa(params as Parameters<typeof generateSelfSignedCa>[0]);
    await expect(promise).rejects.toBeInstanceOf(PkiInputError);
    await expect(promise).rejects.toThrow(message);
  });
});

describe("renewCa", () => {
  it("keeps subject, key and extensions and changes serial and validity", async () => {
    const original = await generateSelfSignedCa({ commonName: "Renew Me", validityDays: 30, keyAlgorithm: "ECDSA-P256", now: NOW });
    const later = new Date(NOW.getTime() + 100 * DAY); // original already expired: renewal still allowed
    const renewed = await renewCa({
      certificatePem: original.certificatePem,
      privateKeyPem: original.privateKeyPem,
      validityDays: 365,
      now: later,
    });
    const before = inspectCertificate(original.certificatePem);
    const after = inspectCertificate(renewed.certificatePem);

    expect(after).toEqual(renewed.inspected);
    expect(after.subject).toBe(before.subject);
    expect(after.issuer).toBe(before.subject);
    expect(after.isSelfSigned).toBe(true);
    expect(after.isCa).toBe(true);
    expect(after.serialNumber).not.toBe(before.serialNumber);
    expect(after.fingerprint).not.toBe(before.fingerprint);
    expect(after.notBefore.getTime()).toBe(later.getTime() - 5 * 60 * 1000);
    expect(after.notAfter.getTime()).toBe(later.getTime() + 365 * DAY);

    const oldCert = new x509.X509Certificate(original.certificatePem);
    const newCert = new x509.X509Certificate(renewed.certificatePem);
    // Same key, byte for byte, and the same encoded subject.
    expect(Buffer.from(newCert.publicKey.rawData).equals(Buffer.from(oldCert.publicKey.rawData))).toBe(true);
    expect(Buffer.from(newCert.subjectName.toArrayBuffer())).toEqual(Buffer.from(oldCert.subjectName.toArrayBuffer()));
    // Same extensions (types, criticality, values).
    const summary = (c: x509.X509Certificate) =>
      c.extensions.map((e) => [e.type, e.critical, Buffer.from(e.value).toString("hex")]).sort();
    expect(summary(newCert)).toEqual(summary(oldCert));
  });

  it("keeps device certificates issued under the old CA verifiable", async () => {
    const ca = await generateSelfSignedCa({ commonName: "Stable CA", validityDays: 30, keyAlgorithm: "ECDSA-P256", now: NOW });
    const device = await issueDeviceCertificateFromPublicKey({
      publicKeyPem: await publicKeyPem(await generateKeys("ECDSA-P256")),
      caCertificatePem: ca.certificatePem,
      caPrivateKeyPem: ca.privateKeyPem,
      deviceId: "dev-1",
      validityDays: 10,
      now: NOW,
    });
    const renewed = await renewCa({ ...ca, validityDays: 3650, now: NOW });
    expect(await verifySignedBy(device.certificatePem, renewed.certificatePem)).toBe(true);
  });

  it("refuses a key that does not belong to the CA", async () => {
    const a = await generateSelfSignedCa({ commonName: "A", validityDays: 30, keyAlgorithm: "ECDSA-P256", now: NOW });
    const b = await generateSelfSignedCa({ commonName: "B", validityDays: 30, keyAlgorithm: "ECDSA-P256", now: NOW });
    const promise = renewCa({ certificatePem: a.certificatePem, privateKeyPem: b.privateKeyPem, validityDays: 30, now: NOW });
    await expect(promise).rejects.toThrow(new PkiInputError("private key does not match the certificate"));
  });

  it("refuses a CA that is not self-signed", async () => {
    const root = await generateSelfSignedCa({ commonName: "Root", validityDays: 30, keyAlgorithm: "ECDSA-P256", now: NOW });
    const intermediate = await makeIntermediate(root);
    const promise = renewCa({ ...intermediate, validityDays: 30, now: NOW });
    await expect(promise).rejects.toBeInstanceOf(PkiInputError);
    await expect(promise).rejects.toThrow("only self-signed CAs can be renewed here");
  });
});
