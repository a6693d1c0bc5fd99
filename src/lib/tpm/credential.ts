// Credential activation (TPM 2.0 Library, Part 1, 24): the service encrypts a secret to the
// TPM's endorsement key, bound to the attestation key's name (TPM2_MakeCredential, done here in
// software: it needs only the EK's public key). Only a TPM that holds that EK *and* has that AK
// loaded gives the secret back (TPM2_ActivateCredential): this is what binds the AK to the EK.
//
// The secret is not stored: it is an HMAC, under a key derived from the service's signing key,
// of the EK hash, the AK name and the challenge's expiry. The device sends the expiry back with
// the secret, and the service recomputes it (any process of a scaled-out service can).
import { createCipheriv, createHmac, constants, publicEncrypt, randomBytes, timingSafeEqual, type KeyObject } from "node:crypto";

/** How long a device has to answer a challenge. */
export const CHALLENGE_SECONDS = 300;

/** KDFa with HMAC-SHA256 (Part 1, 11.4.10.2), counter mode. */
function kdfa(key: Buffer, label: string, contextU: Buffer, contextV: Buffer, bits: number): Buffer {
  const blocks: Buffer[] = [];
  const u32 = (n: number) => { const b = Buffer.alloc(4); b.writeUInt32BE(n); return b; };
  for (let i = 1; blocks.length * 32 < bits / 8; i++) {
    blocks.push(createHmac("sha256", key).update(Buffer.concat([u32(i), Buffer.from(label + "\0", "latin1"), contextU, contextV, u32(bits)])).digest());
  }
  return Buffer.concat(blocks).subarray(0, bits / 8);
}

const u16 = (n: number) => { const b = Buffer.alloc(2); b.writeUInt16BE(n); return b; };
const sized = (data: Buffer) => Buffer.concat([u16(data.length), data]);

/**
 * TPM2_MakeCredential for an RSA endorsement key of the default template (SHA-256 name
 * algorithm, AES-128-CFB): the blob in tpm2-tools' file format (what `tpm2_activatecredential
 * -i` reads: magic, version, TPM2B_ID_OBJECT, TPM2B_ENCRYPTED_SECRET).
 */
export function makeCredential(ekPublicKey: KeyObject, akName: Buffer, secret: Buffer): Buffer {
  if (ekPublicKey.asymmetricKeyType !== "rsa") throw new Error("the endorsement key must be an RSA key");
  const seed = randomBytes(32);
  const encryptedSeed = publicEncrypt({ key: ekPublicKey, padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: "sha256", oaepLabel: Buffer.from("IDENTITY\0", "latin1") }, seed);
  const symmetricKey = kdfa(seed, "STORAGE", akName, Buffer.alloc(0), 128);
  const cipher = createCipheriv("aes-128-cfb", symmetricKey, Buffer.alloc(16));
  const encIdentity = Buffer.concat([cipher.update(sized(secret)), cipher.final()]);
  const hmacKey = kdfa(seed, "INTEGRITY", Buffer.alloc(0), Buffer.alloc(0), 256);
  const integrity = createHmac("sha256", hmacKey).update(Buffer.concat([encIdentity, akName])).digest();
  const idObject = sized(Buffer.concat([sized(integrity), encIdentity]));
  return Buffer.concat([Buffer.from("badcc0de00000001", "hex"), idObject, sized(encryptedSeed)]);
}

/** The secret of a challenge: recomputed, never stored. */
export function challengeSecret(serviceKey: Uint8Array, ekHash: string, akName: Buffer, expiresAt: number): Buffer {
  const key = createHmac("sha256", serviceKey).update("fleet tpm credential activation").digest();
  return createHmac("sha256", key).update(`${ekHash}\n${akName.toString("hex")}\n${expiresAt}`).digest();
}

export function secretMatches(expected: Buffer, given: Buffer): boolean {
  return expected.length === given.length && timingSafeEqual(expected, given);
}
