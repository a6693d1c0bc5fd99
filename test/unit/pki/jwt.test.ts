import { importJWK, jwtVerify, SignJWT } from "jose";
import { beforeAll, describe, expect, it } from "vitest";
import {
  certificateVerifier,
  generateSelfSignedCa,
  importCertificatePublicKey,
  issueDeviceCertificate,
  jwsAlgorithmOf,
  PkiInputError,
  publicKeyJwkOf,
  type GeneratedCa,
} from "../../../src/lib/pki/index.js";
import { makeCsr, NOW, type DeviceKeyType } from "./fixtures.js";

let ca: GeneratedCa;

beforeAll(async () => {
  ca = await generateSelfSignedCa({ commonName: "JWT CA", validityDays: 365, keyAlgorithm: "ECDSA-P256", now: NOW });
});

async function deviceWithKey(keyType: DeviceKeyType, deviceId = "device-jwt") {
  const { keys, csrPem } = await makeCsr(keyType);
  const { certificatePem } = await issueDeviceCertificate({
    csrPem,
    caCertificatePem: ca.certificatePem,
    caPrivateKeyPem: ca.privateKeyPem,
    deviceId,
    validityDays: 30,
    now: NOW,
  });
  return { keys, certificatePem };
}

describe("device token keys", () => {
  it.each<[DeviceKeyType, string]>([
    ["ECDSA-P256", "ES256"],
    ["ECDSA-P384", "ES384"],
    ["Ed25519", "EdDSA"],
    ["RSA-2048", "RS256"],
  ])("verifies a %s-signed JWT with the certificate's key (%s)", async (keyType, expectedAlg) => {
    const { keys, certificatePem } = await deviceWithKey(keyType);
    const alg = jwsAlgorithmOf(certificatePem);
    expect(alg).toBe(expectedAlg);

    const token = await new SignJWT({ scope: "telemetry" })
      .setProtectedHeader({ alg })
      .setSubject("device-jwt")
      .setIssuedAt()
      .setExpirationTime("5m")
      .sign(keys.privateKey);

    const key = await importCertificatePublicKey(certificatePem);
    const { payload, protectedHeader } = await jwtVerify(token, key, { algorithms: [alg], subject: "device-jwt" });
    expect(payload.scope).toBe("telemetry");
    expect(protectedHeader.alg).toBe(alg);

    // The device-auth cache's verifier (Node's own X.509 parser) agrees with the full parse.
    const verifier = certificateVerifier(certificatePem);
    expect(verifier.algorithm).toBe(alg);
    await expect(jwtVerify(token, verifier.key, { algorithms: [verifier.algorithm], subject: "device-jwt" })).resolves.toBeTruthy();

    // The JWK form works too.
    const jwk = publicKeyJwkOf(certificatePem);
    expect(jwk.alg).toBe(alg);
    expect(jwk.use).toBe("sig");
    expect(jwk).not.toHaveProperty("d"); // public only
    await expect(jwtVerify(token, await importJWK(jwk, alg), { algorithms: [alg] })).resolves.toBeTruthy();
  });

  it("rejects a token signed by another device's key", async () => {
    const a = await deviceWithKey("ECDSA-P256", "a");
    const b = await deviceWithKey("ECDSA-P256", "b");
    const token = await new SignJWT({}).setProtectedHeader({ alg: "ES256" }).sign(b.keys.privateKey);
    const key = await importCertificatePublicKey(a.certificatePem);
    await expect(jwtVerify(token, key, { algorithms: ["ES256"] })).rejects.toThrow(/signature verification failed/);
  });

  it("refuses malformed certificates with PkiInputError", async () => {
    expect(() => jwsAlgorithmOf("nope")).toThrow(PkiInputError);
    expect(() => publicKeyJwkOf("nope")).toThrow(PkiInputError);
    await expect(importCertificatePublicKey("nope")).rejects.toBeInstanceOf(PkiInputError);
    expect(() => certificateVerifier("nope")).toThrow(PkiInputError);
  });
});
