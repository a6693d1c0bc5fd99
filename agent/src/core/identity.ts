// A device's cryptographic identity as a real agent would hold it: a key pair generated on
// the device, a PKCS#10 CSR for it, and short-lived JWTs signed with it whose x5t#S256
// header names the certificate the server issued.
import { createHash, X509Certificate } from "node:crypto";
import { SignJWT } from "jose";
import { subtle, x509, type CryptoKey, type CryptoKeyPair } from "./pki.js";

export type DeviceKeyAlgorithm = "ES256" | "EdDSA" | "RS256";

const KEY_PARAMS = {
  ES256: { generate: { name: "ECDSA", namedCurve: "P-256" }, sign: { name: "ECDSA", hash: "SHA-256" } },
  EdDSA: { generate: { name: "Ed25519" }, sign: { name: "Ed25519" } },
  RS256: {
    generate: { name: "RSASSA-PKCS1-v1_5", modulusLength: 2048, publicExponent: new Uint8Array([1, 0, 1]), hash: "SHA-256" },
    sign: { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" },
  },
} as const;

export interface DeviceKeys {
  algorithm: DeviceKeyAlgorithm;
  keys: CryptoKeyPair;
}

export async function generateDeviceKeys(algorithm: DeviceKeyAlgorithm = "ES256"): Promise<DeviceKeys> {
  const keys = (await subtle.generateKey(KEY_PARAMS[algorithm].generate as never, true, ["sign", "verify"])) as CryptoKeyPair;
  return { algorithm, keys };
}

/** The device's public key as a PEM "PUBLIC KEY" (SPKI). */
export async function publicKeyPemOf(device: DeviceKeys): Promise<string> {
  const spki = Buffer.from(await subtle.exportKey("spki", device.keys.publicKey)).toString("base64");
  return `-----BEGIN PUBLIC KEY-----\n${spki.replace(/(.{64})/g, "$1\n").replace(/\n$/, "")}\n-----END PUBLIC KEY-----\n`;
}

/** A PKCS#10 request signed with the device key (the server replaces the subject anyway). */
export async function createCsr(device: DeviceKeys, commonName: string): Promise<string> {
  const csr = await x509.Pkcs10CertificateRequestGenerator.create({
    name: new x509.Name([{ CN: [commonName] }]),
    keys: device.keys as never,
    signingAlgorithm: KEY_PARAMS[device.algorithm].sign as never,
  });
  return csr.toString("pem");
}

/** RFC 7515 x5t#S256: base64url of the SHA-256 of the certificate's DER. */
export function x5tS256(certificatePem: string): string {
  return createHash("sha256").update(new X509Certificate(certificatePem).raw).digest("base64url");
}

export interface DeviceTokenClaims {
  deviceId: string;
  /** x5t#S256 of the certificate to name */
  x5t: string;
  /** default 300 (the longest the server accepts) */
  lifetimeSeconds?: number;
  /** issued-at override, for tests of expiry */
  issuedAt?: number;
}

export async function signDeviceToken(device: DeviceKeys, claims: DeviceTokenClaims): Promise<string> {
  const iat = claims.issuedAt ?? Math.floor(Date.now() / 1000);
  return new SignJWT({})
    .setProtectedHeader({ alg: device.algorithm, typ: "JWT", "x5t#S256": claims.x5t })
    .setSubject(claims.deviceId)
    .setIssuedAt(iat)
    .setExpirationTime(iat + (claims.lifetimeSeconds ?? 300))
    .sign(device.keys.privateKey as never);
}

/**
 * A device key that signs where it lives and never leaves it (a TPM: agent/src/tpm.ts). ES256
 * only; `sign` answers IEEE P1363 r||s of an ECDSA P-256 signature over SHA-256(data).
 */
export interface HeldKey {
  /** DER SubjectPublicKeyInfo */
  spki: Uint8Array;
  sign(data: Uint8Array): Promise<Uint8Array>;
  /** what the state directory keeps to use it again (for a TPM: the TPM-wrapped blob, never the private key) */
  stored: { kind: "tpm"; public: string; private: string };
}

/** What the service verifies of a TPM-held key (src/modules/tpm-ek-cas/attestation.ts). */
export interface TpmEvidence {
  ekCertificate: string;
  ekChain?: string[];
  akPublic: string;
  challengeExpiresAt: number;
  activatedSecret: string;
  keyPublic: string;
  certifyInfo: string;
  certifySignature: string;
}

/** Asks the service for a credential-activation challenge (agent.tpmChallenge). */
export type TpmChallenge = (input: { ekCertificate: string; akPublic: string }) => Promise<{ credential: string; expiresAt: number }>;

export interface TpmAttester {
  attestNewKey(challenge: TpmChallenge): Promise<{ key: HeldKey; evidence: TpmEvidence }>;
}

const ECDSA_P256 = { name: "ECDSA", namedCurve: "P-256" } as const;

/** A PKCS#10 request signed by a held key: x509 builds it, the key signs its TBS part where it lives. */
export async function createCsrWithHeldKey(key: HeldKey, commonName: string): Promise<string> {
  const publicKey = await subtle.importKey("spki", key.spki as Uint8Array<ArrayBuffer>, ECDSA_P256, true, ["verify"]);
  const privateKey = { algorithm: ECDSA_P256, type: "private" };
  const crypto = {
    subtle: {
      exportKey: (format: "spki", k: CryptoKey) => subtle.exportKey(format, k),
      sign: async (_algorithm: unknown, _key: unknown, data: ArrayBuffer) => (await key.sign(new Uint8Array(data))).slice().buffer,
    },
  };
  const csr = await x509.Pkcs10CertificateRequestGenerator.create(
    { name: new x509.Name([{ CN: [commonName] }]), keys: { publicKey, privateKey } as never, signingAlgorithm: { name: "ECDSA", hash: "SHA-256" } as never },
    crypto as never,
  );
  return csr.toString("pem");
}

/** The device token (as signDeviceToken makes it), signed by a held key. */
export async function signDeviceTokenWithHeldKey(key: HeldKey, claims: DeviceTokenClaims): Promise<string> {
  const iat = claims.issuedAt ?? Math.floor(Date.now() / 1000);
  const part = (value: object) => Buffer.from(JSON.stringify(value)).toString("base64url");
  const input = `${part({ alg: "ES256", typ: "JWT", "x5t#S256": claims.x5t })}.${part({ sub: claims.deviceId, iat, exp: iat + (claims.lifetimeSeconds ?? 300) })}`;
  const signature = await key.sign(Buffer.from(input));
  return `${input}.${Buffer.from(signature).toString("base64url")}`;
}
