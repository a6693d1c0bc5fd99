/**
 * Key handling: generation, private key import, public key facts.
 *
 * node:crypto KeyObjects are used to *read* keys because OpenSSL understands
 * every encoding users paste (PKCS#8, SEC1 "EC PRIVATE KEY", PKCS#1 "RSA
 * PRIVATE KEY", compressed EC points ...). WebCrypto is used to *sign*,
 * because that is what @peculiar/x509 drives.
 */
import { createPrivateKey, createPublicKey, type KeyObject } from "node:crypto";
import { PkiInputError } from "./errors.js";
import { decodePemBlocks, toArrayBuffer, toPem } from "./pem.js";
import { subtle, type CryptoKey, type CryptoKeyPair } from "./provider.js";

/** Key algorithms offered when *we* generate a CA. */
export const KEY_ALGORITHMS = ["ECDSA-P256", "RSA-2048", "RSA-4096"] as const;
export type KeyAlgorithm = (typeof KEY_ALGORITHMS)[number];

/** What a public key is, in the terms the rest of the library cares about. */
export type PublicKeyKind =
  | { type: "ec"; curve: string } // curve is "P-256", "P-384", "P-521" or OpenSSL's name
  | { type: "rsa"; bits: number }
  | { type: "ed25519" }
  | { type: "other"; name: string };

/** The minimum RSA size we sign with or certify (NIST SP 800-131A). */
export const MIN_RSA_BITS = 2048;

const NIST_CURVES: Record<string, string> = {
  prime256v1: "P-256",
  secp384r1: "P-384",
  secp521r1: "P-521",
};

export function describeKey(key: KeyObject): PublicKeyKind {
  const details = key.asymmetricKeyDetails ?? {};
  switch (key.asymmetricKeyType) {
    case "ec": {
      const curve = details.namedCurve ?? "unknown curve";
      return { type: "ec", curve: NIST_CURVES[curve] ?? curve };
    }
    case "rsa":
      return { type: "rsa", bits: details.modulusLength ?? 0 };
    case "ed25519":
      return { type: "ed25519" };
    default:
      return { type: "other", name: key.asymmetricKeyType ?? "unknown" };
  }
}

/** Human label used by `inspectCertificate`, e.g. "ECDSA P-256", "RSA 2048". */
export function keyLabel(kind: PublicKeyKind): string {
  switch (kind.type) {
    case "ec":
      return `ECDSA ${kind.curve}`;
    case "rsa":
      return `RSA ${kind.bits}`;
    case "ed25519":
      return "Ed25519";
    default:
      return kind.name;
  }
}

/** Parses DER SubjectPublicKeyInfo. */
export function publicKeyFromSpki(spki: ArrayBuffer | Uint8Array): KeyObject {
  try {
    return createPublicKey({ key: Buffer.from(toArrayBuffer(spki)), format: "der", type: "spki" });
  } catch (cause) {
    throw new PkiInputError("public key could not be parsed", { cause });
  }
}

/**
 * Canonical SPKI DER of a key. Comparing these (rather than the bytes found in
 * a certificate) makes "same key" checks immune to encoding variations.
 */
export function spkiDerOf(key: KeyObject): Buffer {
  return key.export({ type: "spki", format: "der" });
}

export function sameKey(a: KeyObject, b: KeyObject): boolean {
  return spkiDerOf(a).equals(spkiDerOf(b));
}

// ---------------------------------------------------------------------------
// Private keys

/** PEM labels we accept, mapped to node:crypto's DER `type`. */
const PRIVATE_KEY_TYPES = {
  "PRIVATE KEY": "pkcs8",
  "EC PRIVATE KEY": "sec1",
  "RSA PRIVATE KEY": "pkcs1",
} as const;

/**
 * Reads an unencrypted private key PEM (PKCS#8, SEC1 or PKCS#1).
 * `what` names the input in messages ("private key", "CA private key").
 */
export function readPrivateKeyPem(pem: unknown, what = "private key"): KeyObject {
  // `openssl ecparam -genkey` prepends an "EC PARAMETERS" block: harmless, skip it.
  const blocks = decodePemBlocks(pem, what).filter((b) => b.label !== "EC PARAMETERS");
  const [block, ...rest] = blocks;
  if (!block) throw new PkiInputError(`not a PEM ${what} (only EC PARAMETERS found)`);
  if (rest.length > 0) throw new PkiInputError(`${what} must contain exactly one PEM block`);
  if (block.label === "ENCRYPTED PRIVATE KEY") {
    throw new PkiInputError(`${what} is encrypted; provide it without a passphrase`);
  }
  const type = PRIVATE_KEY_TYPES[block.label as keyof typeof PRIVATE_KEY_TYPES];
  if (!type) {
    throw new PkiInputError(
      `${what} must be a PEM "PRIVATE KEY", "EC PRIVATE KEY" or "RSA PRIVATE KEY", found "${block.label}"`,
    );
  }
  try {
    return createPrivateKey({ key: Buffer.from(block.der), format: "der", type });
  } catch (cause) {
    throw new PkiInputError(`${what} could not be parsed`, { cause });
  }
}

/** A private key that parsed, is supported, and knows how it signs. */
export interface PrivateKeyInfo {
  /** The matching public key, for comparing with certificates. */
  publicKey: KeyObject;
  kind: PublicKeyKind;
  /** The key re-encoded as PKCS#8: the one format we store. */
  pkcs8Der: Buffer;
  pkcs8Pem: string;
  /** WebCrypto import parameters. */
  importParams: { name: string; namedCurve?: string; hash?: string };
  /** Passed as x509's `signingAlgorithm` (fixes the hash for ECDSA). */
  signingAlgorithm: { name: string; hash?: string };
}

/** A private key ready for x509's generators. */
export interface SigningKey extends PrivateKeyInfo {
  /** WebCrypto key imported for "sign" only. */
  privateKey: CryptoKey;
}

/**
 * Reads a private key PEM and checks that we can sign with it. Synchronous,
 * so upload validation does not need WebCrypto.
 */
export function readPrivateKey(pem: unknown, what = "private key"): PrivateKeyInfo {
  const keyObject = readPrivateKeyPem(pem, what);
  const publicKey = createPublicKey(keyObject);
  const kind = describeKey(publicKey);
  const pkcs8Der = keyObject.export({ type: "pkcs8", format: "der" });
  return { publicKey, kind, pkcs8Der, pkcs8Pem: toPem(pkcs8Der, "PRIVATE KEY"), ...signingParamsFor(kind, what) };
}

/**
 * How a key of this kind signs certificates. ECDSA uses the hash matching the
 * curve size (P-384 with SHA-384 ...); RSA always PKCS#1 v1.5 with SHA-256,
 * which every TLS stack and embedded device verifies.
 */
function signingParamsFor(kind: PublicKeyKind, what: string): Pick<PrivateKeyInfo, "importParams" | "signingAlgorithm"> {
  switch (kind.type) {
    case "ec": {
      const hash = ({ "P-256": "SHA-256", "P-384": "SHA-384", "P-521": "SHA-512" } as Record<string, string>)[kind.curve];
      if (!hash) throw new PkiInputError(`${what} uses an unsupported EC curve (${kind.curve})`);
      return {
        importParams: { name: "ECDSA", namedCurve: kind.curve },
        signingAlgorithm: { name: "ECDSA", hash },
      };
    }
    case "rsa": {
      if (kind.bits < MIN_RSA_BITS) {
        throw new PkiInputError(`${what} is too weak (RSA ${kind.bits}; at least ${MIN_RSA_BITS} bits required)`);
      }
      const params = { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" };
      return { importParams: params, signingAlgorithm: params };
    }
    case "ed25519":
      return { importParams: { name: "Ed25519" }, signingAlgorithm: { name: "Ed25519" } };
    default:
      throw new PkiInputError(`${what} has an unsupported key type (${kind.name})`);
  }
}

/** Turns a private key PEM into a {@link SigningKey}. */
export async function loadSigningKey(pem: unknown, what = "private key"): Promise<SigningKey> {
  const info = readPrivateKey(pem, what);
  const privateKey = await subtle.importKey("pkcs8", toArrayBuffer(info.pkcs8Der), info.importParams, false, ["sign"]);
  return { ...info, privateKey };
}

const RSA_EXPONENT = new Uint8Array([1, 0, 1]); // 65537

const GENERATE_PARAMS: Record<KeyAlgorithm, { name: string } & Record<string, unknown>> = {
  "ECDSA-P256": { name: "ECDSA", namedCurve: "P-256" },
  "RSA-2048": { name: "RSASSA-PKCS1-v1_5", modulusLength: 2048, publicExponent: RSA_EXPONENT, hash: "SHA-256" },
  "RSA-4096": { name: "RSASSA-PKCS1-v1_5", modulusLength: 4096, publicExponent: RSA_EXPONENT, hash: "SHA-256" },
};

/** Generates a new key pair and returns its private key as PKCS#8 PEM. */
export async function generatePrivateKeyPem(algorithm: KeyAlgorithm): Promise<string> {
  // hasOwn, not a plain lookup: the value may come straight from a request body.
  if (!Object.hasOwn(GENERATE_PARAMS, algorithm)) {
    throw new PkiInputError(`unsupported key algorithm "${String(algorithm)}" (use one of ${KEY_ALGORITHMS.join(", ")})`);
  }
  const pair = (await subtle.generateKey(GENERATE_PARAMS[algorithm], true, ["sign", "verify"])) as CryptoKeyPair;
  return toPem(await subtle.exportKey("pkcs8", pair.privateKey), "PRIVATE KEY");
}
