/**
 * Device token verification support: turn a device certificate into the key
 * and algorithm `jose.jwtVerify` needs.
 *
 * Pinning the algorithm to the key type (instead of trusting the token's
 * "alg" header) is what prevents algorithm-confusion attacks: pass
 * `{ algorithms: [jwsAlgorithmOf(certPem)] }` to jwtVerify.
 */
import { X509Certificate, type KeyObject } from "node:crypto";
import { PkiInputError } from "./errors.js";
import { parseSingleCertificate, type ParsedCertificate } from "./inspect.js";
import { describeKey, keyLabel, MIN_RSA_BITS, spkiDerOf } from "./keys.js";
import { toArrayBuffer } from "./pem.js";
import { subtle, type CryptoKey } from "./provider.js";

export type JwsAlgorithm = "ES256" | "ES384" | "EdDSA" | "RS256";

/** WebCrypto import parameters per JWS algorithm (RFC 7518 / RFC 8037). */
const IMPORT_PARAMS: Record<JwsAlgorithm, { name: string; namedCurve?: string; hash?: string }> = {
  ES256: { name: "ECDSA", namedCurve: "P-256" },
  ES384: { name: "ECDSA", namedCurve: "P-384" },
  EdDSA: { name: "Ed25519" },
  RS256: { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" },
};

function algorithmOf(parsed: ParsedCertificate): JwsAlgorithm {
  return algorithmOfKey(parsed.publicKey);
}

function algorithmOfKey(publicKey: KeyObject): JwsAlgorithm {
  const kind = describeKey(publicKey);
  if (kind.type === "ec" && kind.curve === "P-256") return "ES256";
  if (kind.type === "ec" && kind.curve === "P-384") return "ES384";
  if (kind.type === "ed25519") return "EdDSA";
  if (kind.type === "rsa" && kind.bits >= MIN_RSA_BITS) return "RS256";
  throw new PkiInputError(`certificate key type ${keyLabel(kind)} cannot verify device tokens`);
}

/**
 * The key that verifies the tokens of this certificate's holder, and the one algorithm they
 * must use (jose's jwtVerify takes the KeyObject as it is). Node's own X.509 parser reads only
 * the key here: the full parse of inspect.ts (ASN.1 in JavaScript, every extension) made a
 * device's first request after a start, when the service loads its certificate, ~40 % of the
 * service's CPU in the heartbeat benchmark's profile; a restart with a large fleet is exactly
 * that, for every device at once.
 */
export function certificateVerifier(certPem: string): { key: KeyObject; algorithm: JwsAlgorithm } {
  let key: KeyObject;
  try {
    key = new X509Certificate(certPem).publicKey;
  } catch {
    throw new PkiInputError("not a PEM certificate");
  }
  return { key, algorithm: algorithmOfKey(key) };
}

/** The single JWS algorithm a device holding this certificate's key must use. */
export function jwsAlgorithmOf(certPem: string): JwsAlgorithm {
  return algorithmOf(parseSingleCertificate(certPem));
}

/** The certificate's public key as a WebCrypto verify key, accepted by jose's jwtVerify. */
export async function importCertificatePublicKey(certPem: string): Promise<CryptoKey> {
  const parsed = parseSingleCertificate(certPem);
  const params = IMPORT_PARAMS[algorithmOf(parsed)];
  return subtle.importKey("spki", toArrayBuffer(spkiDerOf(parsed.publicKey)), params, true, ["verify"]);
}

/** The certificate's public key as a JWK (with "alg" and "use"), e.g. for caching or a JWKS. */
export function publicKeyJwkOf(certPem: string): Record<string, string> & { kty: string; alg: JwsAlgorithm; use: "sig" } {
  const parsed = parseSingleCertificate(certPem);
  const alg = algorithmOf(parsed);
  const jwk = parsed.publicKey.export({ format: "jwk" }) as Record<string, string> & { kty: string };
  return { ...jwk, alg, use: "sig" };
}
