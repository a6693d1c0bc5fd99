import { createPrivateKey } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import {
  generateSelfSignedCa,
  inspectCertificate,
  issueDeviceCertificateFromPublicKey,
  parseCaUpload,
  PkiInputError,
  type GeneratedCa,
} from "../../../src/lib/pki/index.js";
import { DAY, generateKeys, importSigningKey, makeIntermediate, NOW, publicKeyPem, x509 } from "./fixtures.js";

let ecCa: GeneratedCa;
let rsaCa: GeneratedCa;

beforeAll(async () => {
  ecCa = await generateSelfSignedCa({ commonName: "Upload EC", validityDays: 365, keyAlgorithm: "ECDSA-P256", now: NOW });
  rsaCa = await generateSelfSignedCa({ commonName: "Upload RSA", validityDays: 365, keyAlgorithm: "RSA-2048", now: NOW });
});

/** Runs parseCaUpload and returns the PkiInputError message (fails the test if it does not throw one). */
function refusal(params: Parameters<typeof parseCaUpload>[0]): string {
  try {
    parseCaUpload(params);
  } catch (error) {
    expect(error).toBeInstanceOf(PkiInputError);
    return (error as Error).message;
  }
  throw new Error("parseCaUpload accepted the input");
}

describe("parseCaUpload: accepted uploads", () => {
  it("accepts a root CA with its key", () => {
    const result = parseCaUpload({ certificatePem: ecCa.certificatePem, privateKeyPem: ecCa.privateKeyPem, now: NOW });
    expect(result.certificate).toEqual(inspectCertificate(ecCa.certificatePem));
    expect(result.chainPems).toEqual([]);
    expect(result.privateKeyPem).toBe(ecCa.privateKeyPem);
  });

  it("accepts a CA certificate alone (no key)", () => {
    for (const privateKeyPem of [undefined, null, "", "  \n"]) {
      const result = parseCaUpload({ certificatePem: rsaCa.certificatePem, privateKeyPem, now: NOW });
      expect(result.privateKeyPem).toBeNull();
      expect(result.certificate.keyAlgorithm).toBe("RSA 2048");
    }
  });

  it.each([
    ["SEC1 EC PRIVATE KEY", () => createPrivateKey(ecCa.privateKeyPem).export({ type: "sec1", format: "pem" }), () => ecCa],
    ["PKCS#1 RSA PRIVATE KEY", () => createPrivateKey(rsaCa.privateKeyPem).export({ type: "pkcs1", format: "pem" }), () => rsaCa],
  ])("accepts a %s and normalizes it to PKCS#8", (_name, legacyKey, ca) => {
    const legacy = legacyKey() as string;
    expect(legacy).not.toContain("BEGIN PRIVATE KEY");
    const result = parseCaUpload({ certificatePem: ca().certificatePem, privateKeyPem: legacy, now: NOW });
    expect(result.privateKeyPem).toBe(ca().privateKeyPem);
  });

  it("accepts an EC key preceded by an EC PARAMETERS block (openssl ecparam -genkey)", () => {
    const sec1 = createPrivateKey(ecCa.privateKeyPem).export({ type: "sec1", format: "pem" }) as string;
    const withParams = `-----BEGIN EC PARAMETERS-----\nBggqhkjOPQMBBw==\n-----END EC PARAMETERS-----\n${sec1}`;
    const result = parseCaUpload({ certificatePem: ecCa.certificatePem, privateKeyPem: withParams, now: NOW });
    expect(result.privateKeyPem).toBe(ecCa.privateKeyPem);
  });

  it("accepts an intermediate CA followed by its root, and returns the issuers as chainPems", async () => {
    const intermediate = await makeIntermediate(ecCa);
    const result = parseCaUpload({
      certificatePem: `${intermediate.certificatePem}\n${ecCa.certificatePem}`,
      privateKeyPem: intermediate.privateKeyPem,
      now: NOW,
    });
    expect(result.certificate.subject).toBe("CN=Customer Intermediate CA, O=Customer");
    expect(result.certificate.issuer).toBe("CN=Upload EC");
    expect(result.certificate.isSelfSigned).toBe(false);
    expect(result.chainPems).toEqual([ecCa.certificatePem]);
    // Same key, re-encoded in our canonical layout (x509's encoder omits the final newline).
    expect(result.privateKeyPem).toBe(`${intermediate.privateKeyPem.trim()}\n`);
  });

  it("accepts an intermediate CA alone (its issuers are optional)", async () => {
    const intermediate = await makeIntermediate(ecCa);
    expect(parseCaUpload({ certificatePem: intermediate.certificatePem, now: NOW }).chainPems).toEqual([]);
  });
});

describe("parseCaUpload: refusals", () => {
  it("refuses garbage", () => {
    expect(refusal({ certificatePem: "not a certificate", now: NOW })).toMatch(/^not a PEM certificate/);
    expect(refusal({ certificatePem: "", now: NOW })).toBe("certificate is empty");
  });

  it("refuses a private key pasted in the certificate field", () => {
    expect(refusal({ certificatePem: ecCa.privateKeyPem, now: NOW })).toMatch(/must be a PEM CERTIFICATE, found a PEM PRIVATE KEY/);
  });

  it("refuses an expired CA", async () => {
    const old = await generateSelfSignedCa({ commonName: "Old", validityDays: 30, keyAlgorithm: "ECDSA-P256", now: new Date("2020-01-01T00:00:00Z") });
    expect(refusal({ certificatePem: old.certificatePem, privateKeyPem: old.privateKeyPem, now: NOW })).toBe(
      "certificate has expired (notAfter 2020-01-31T00:00:00.000Z)",
    );
  });

  it("refuses a CA that is not yet valid", () => {
    const message = refusal({ certificatePem: ecCa.certificatePem, now: new Date(NOW.getTime() - DAY) });
    expect(message).toBe("certificate is not yet valid (notBefore 2025-06-01T11:55:00.000Z)");
  });

  it("refuses a leaf (non-CA) certificate", async () => {
    const leaf = await issueDeviceCertificateFromPublicKey({
      publicKeyPem: await publicKeyPem(await generateKeys("ECDSA-P256")),
      caCertificatePem: ecCa.certificatePem,
      caPrivateKeyPem: ecCa.privateKeyPem,
      deviceId: "leaf",
      validityDays: 30,
      now: NOW,
    });
    expect(refusal({ certificatePem: leaf.certificatePem, now: NOW })).toBe(
      "certificate is not a CA (basicConstraints cA is false)",
    );
  });

  it("refuses a certificate without basicConstraints", async () => {
    const keys = await generateKeys("ECDSA-P256");
    const cert = await x509.X509CertificateGenerator.createSelfSigned({
      name: "CN=No constraints",
      keys: keys,
      notBefore: new Date(NOW.getTime() - DAY),
      notAfter: new Date(NOW.getTime() + DAY),
      signingAlgorithm: { name: "ECDSA", hash: "SHA-256" },
    });
    expect(refusal({ certificatePem: cert.toString("pem"), now: NOW })).toBe(
      "certificate is not a CA (it has no basicConstraints extension)",
    );
  });

  it("refuses a CA whose keyUsage does not allow certificate signing", async () => {
    const keys = await generateKeys("ECDSA-P256");
    const cert = await x509.X509CertificateGenerator.createSelfSigned({
      name: "CN=Signing only",
      keys: keys,
      notBefore: new Date(NOW.getTime() - DAY),
      notAfter: new Date(NOW.getTime() + DAY),
      signingAlgorithm: { name: "ECDSA", hash: "SHA-256" },
      extensions: [
        new x509.BasicConstraintsExtension(true, undefined, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
      ],
    });
    expect(refusal({ certificatePem: cert.toString("pem"), now: NOW })).toMatch(/keyUsage lacks keyCertSign/);
  });

  it("refuses a private key that belongs to another certificate", () => {
    expect(refusal({ certificatePem: ecCa.certificatePem, privateKeyPem: rsaCa.privateKeyPem, now: NOW })).toBe(
      "private key does not match the certificate",
    );
  });

  it.each<[string, () => string, RegExp]>([
    ["garbage", () => "garbage", /^not a PEM private key/],
    ["a certificate", () => ecCa.certificatePem, /private key must be a PEM "PRIVATE KEY".*found "CERTIFICATE"/],
    [
      "an encrypted PKCS#8 key",
      () => createPrivateKey(ecCa.privateKeyPem).export({ type: "pkcs8", format: "pem", cipher: "aes-256-cbc", passphrase: "pw" }) as string,
      /private key is encrypted/,
    ],
    [
      "a legacy encrypted SEC1 key",
      () => createPrivateKey(ecCa.privateKeyPem).export({ type: "sec1", format: "pem", cipher: "aes-256-cbc", passphrase: "pw" }) as string,
      /private key is encrypted/,
    ],
    ["a corrupt key", () => "-----BEGIN PRIVATE KEY-----\nMAA=\n-----END PRIVATE KEY-----\n", /private key could not be parsed/],
  ])("refuses a private key that is %s", (_name, key, message) => {
    expect(refusal({ certificatePem: ecCa.certificatePem, privateKeyPem: key(), now: NOW })).toMatch(message);
  });

  it("refuses a chain in the wrong order", async () => {
    const intermediate = await makeIntermediate(ecCa);
    const message = refusal({ certificatePem: ecCa.certificatePem + intermediate.certificatePem, now: NOW });
    expect(message).toBe(
      "certificate chain is broken: certificate #1 (CN=Upload EC) is not issued by certificate #2 (CN=Customer Intermediate CA, O=Customer)",
    );
  });

  it("refuses a chain whose issuer did not sign the CA", async () => {
    const intermediate = await makeIntermediate(ecCa);
    // Same name as the real root, different key.
    const impostor = await generateSelfSignedCa({ commonName: "Upload EC", validityDays: 365, keyAlgorithm: "ECDSA-P256", now: NOW });
    const message = refusal({ certificatePem: intermediate.certificatePem + impostor.certificatePem, now: NOW });
    expect(message).toMatch(/^certificate chain is broken: certificate #1/);
  });

  it("refuses a self-issued root whose signature does not verify", async () => {
    const keys = await generateKeys("ECDSA-P256");
    const signer = await importSigningKey(rsaCa.privateKeyPem);
    const cert = await x509.X509CertificateGenerator.create({
      subject: "CN=Broken root",
      issuer: "CN=Broken root",
      notBefore: new Date(NOW.getTime() - DAY),
      notAfter: new Date(NOW.getTime() + DAY),
      publicKey: keys.publicKey,
      signingKey: signer.key,
      signingAlgorithm: signer.alg,
      extensions: [new x509.BasicConstraintsExtension(true, undefined, true)],
    });
    expect(refusal({ certificatePem: cert.toString("pem"), now: NOW })).toBe(
      "certificate is self-issued but its signature does not verify",
    );
  });
});
