/**
 * Shared helpers for the PKI tests. Everything here builds inputs the way an
 * external party would (a device making a CSR, an operator bringing their own
 * intermediate CA), using @peculiar/x509 and node:crypto directly.
 */
// The library must load first: it installs the Reflect polyfill x509 needs
// and points x509 at Node's WebCrypto.
import "../../../src/lib/pki/index.js";
import * as x509 from "@peculiar/x509";
import { createHash, createPrivateKey, webcrypto } from "node:crypto";

export { x509 };
export const subtle = webcrypto.subtle;

/** A fixed clock, so tests do not depend on today's date. */
export const NOW = new Date("2025-06-01T12:00:00.000Z");
export const DAY = 24 * 60 * 60 * 1000;

export type DeviceKeyType = "ECDSA-P256" | "ECDSA-P384" | "ECDSA-P521" | "Ed25519" | "RSA-2048" | "RSA-1024";

type Params = webcrypto.Algorithm & Record<string, unknown>;

const KEY_PARAMS: Record<DeviceKeyType, { gen: Params; sign: Params }> = {
  "ECDSA-P256": { gen: { name: "ECDSA", namedCurve: "P-256" }, sign: { name: "ECDSA", hash: "SHA-256" } },
  "ECDSA-P384": { gen: { name: "ECDSA", namedCurve: "P-384" }, sign: { name: "ECDSA", hash: "SHA-384" } },
  "ECDSA-P521": { gen: { name: "ECDSA", namedCurve: "P-521" }, sign: { name: "ECDSA", hash: "SHA-512" } },
  Ed25519: { gen: { name: "Ed25519" }, sign: { name: "Ed25519" } },
  "RSA-2048": { gen: rsa(2048), sign: { name: "RSASSA-PKCS1-v1_5" } },
  "RSA-1024": { gen: rsa(1024), sign: { name: "RSASSA-PKCS1-v1_5" } },
};

function rsa(modulusLength: number): Params {
  return { name: "RSASSA-PKCS1-v1_5", modulusLength, publicExponent: new Uint8Array([1, 0, 1]), hash: "SHA-256" };
}

export async function generateKeys(type: DeviceKeyType): Promise<webcrypto.CryptoKeyPair> {
  return (await subtle.generateKey(KEY_PARAMS[type].gen, true, ["sign", "verify"])) as webcrypto.CryptoKeyPair;
}

/** A device-side CSR, optionally asking for things we must ignore (SANs, CA flag). */
export async function makeCsr(type: DeviceKeyType, name = "CN=whatever-the-device-says") {
  const keys = await generateKeys(type);
  const csr = await x509.Pkcs10CertificateRequestGenerator.create({
    name,
    keys: keys,
    signingAlgorithm: KEY_PARAMS[type].sign,
    extensions: [
      new x509.SubjectAlternativeNameExtension([{ type: "dns", value: "evil.example.com" }]),
      new x509.BasicConstraintsExtension(true),
    ],
  });
  return { keys, csrPem: csr.toString("pem") };
}

export async function publicKeyPem(keys: webcrypto.CryptoKeyPair): Promise<string> {
  return x509.PemConverter.encode(await subtle.exportKey("spki", keys.publicKey), "PUBLIC KEY");
}

/** Imports a PKCS#8 PEM produced by the library for signing in tests. */
export async function importSigningKey(pkcs8Pem: string): Promise<{ key: webcrypto.CryptoKey; alg: { name: string; hash: string } }> {
  const der = x509.PemConverter.decodeFirst(pkcs8Pem);
  const type = createPrivateKey(pkcs8Pem).asymmetricKeyType;
  const params =
    type === "ec"
      ? { name: "ECDSA", namedCurve: "P-256", hash: "SHA-256" }
      : { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" };
  return { key: await subtle.importKey("pkcs8", der, params, false, ["sign"]), alg: params };
}

/**
 * An intermediate CA signed by `root`: what a customer might upload as
 * "intermediate + root" chain.
 */
export async function makeIntermediate(root: { certificatePem: string; privateKeyPem: string }, now = NOW) {
  const rootCert = new x509.X509Certificate(root.certificatePem);
  const signer = await importSigningKey(root.privateKeyPem);
  const keys = await generateKeys("ECDSA-P256");
  const cert = await x509.X509CertificateGenerator.create({
    subject: "CN=Customer Intermediate CA, O=Customer",
    issuer: rootCert.subjectName,
    notBefore: new Date(now.getTime() - DAY),
    notAfter: new Date(now.getTime() + 365 * DAY),
    publicKey: keys.publicKey,
    signingKey: signer.key,
    signingAlgorithm: signer.alg,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  const pkcs8 = await subtle.exportKey("pkcs8", keys.privateKey);
  return {
    certificatePem: cert.toString("pem"),
    privateKeyPem: x509.PemConverter.encode(pkcs8, "PRIVATE KEY"),
  };
}

/** A self-signed certificate with arbitrary extensions, for inspection tests. */
export async function makeSelfSigned(extensions: x509.Extension[], name = "CN=Test") {
  const keys = await generateKeys("ECDSA-P256");
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    name,
    keys: keys,
    notBefore: new Date(NOW.getTime() - DAY),
    notAfter: new Date(NOW.getTime() + DAY),
    signingAlgorithm: { name: "ECDSA", hash: "SHA-256" },
    extensions,
  });
  return { cert, keys, pem: cert.toString("pem") };
}

export function sha256Hex(der: ArrayBuffer | Uint8Array): string {
  return createHash("sha256").update(new Uint8Array(der)).digest("hex");
}

export function pemToDer(pem: string): ArrayBuffer {
  return x509.PemConverter.decodeFirst(pem);
}
