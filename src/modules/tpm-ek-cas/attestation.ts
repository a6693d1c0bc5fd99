// Verifies what `fleet-agent enroll --tpm` sends (docs/admission.md, "TPM-held keys"):
//   1. the EK certificate chains (through the intermediates the device sends) to a CA the
//      organization trusts;
//   2. the attestation key (AK) is bound to that EK: the device activated the credential the
//      service made for the pair (agent.tpmChallenge), which only the TPM holding both can do,
//      and the AK is a restricted signing key that never leaves the TPM;
//   3. the AK certified (TPM2_Certify) the device key: a key created inside the TPM
//      (fixedTPM, fixedParent, sensitiveDataOrigin), the very key of the CSR.
// A restricted AK signs only attestations the TPM generated itself (TPM_GENERATED_VALUE), so a
// certification signed by it cannot be forged outside that TPM. Every refusal names its reason.
import { createHash, verify } from "node:crypto";
import { z } from "zod";
import type { DbTx } from "../../db/client.js";
import { forbidden, invalidField } from "../../trpc/errors.js";
import { isIssuedBy, parseSingleCertificate, type ParsedCertificate } from "../../lib/pki/inspect.js";
import { PkiInputError } from "../../lib/pki/index.js";
import { challengeSecret, CHALLENGE_SECONDS, makeCredential, secretMatches } from "../../lib/tpm/credential.js";
import { parseCertifyInfo, parseEcdsaSignature, parseTpmPublic, TPMA, TpmStructureError, type TpmPublicKey } from "../../lib/tpm/structures.js";

const base64 = (max: number) => z.string().min(1).max(max).regex(/^[A-Za-z0-9+/]+={0,2}$/, "base64");

export const tpmChallengeInput = z.object({
  ekCertificate: z.string().min(1).max(16 * 1024).describe("the TPM's RSA endorsement key certificate (PEM), as read from its NV index 0x01c00002"),
  akPublic: base64(4096).describe("the attestation key's TPM2B_PUBLIC (base64), as tpm2_createak writes it"),
}).strict();

export const tpmChallengeOutput = z.object({
  credential: z.string().describe("TPM2_MakeCredential's blob for the EK and the AK's name (base64, tpm2-tools' file format: tpm2_activatecredential -i)"),
  expiresAt: z.number().int().describe("seconds since the epoch; send it back with the activated secret before then"),
});

export const tpmEvidenceInput = z.object({
  ekCertificate: z.string().min(1).max(16 * 1024).describe("the TPM's endorsement key certificate (PEM)"),
  ekChain: z.array(z.string().min(1).max(16 * 1024)).max(5).optional().describe("intermediate CA certificates (PEM) between the EK certificate and a trusted EK CA"),
  akPublic: base64(4096).describe("the attestation key's TPM2B_PUBLIC (base64)"),
  challengeExpiresAt: z.number().int().describe("the challenge's expiresAt (agent.tpmChallenge)"),
  activatedSecret: base64(256).describe("what tpm2_activatecredential recovered from the challenge's credential (base64)"),
  keyPublic: base64(4096).describe("the device key's TPM2B_PUBLIC (base64): the key of the CSR"),
  certifyInfo: base64(4096).describe("TPM2_Certify's attestation (TPMS_ATTEST, base64) of the device key by the AK"),
  certifySignature: base64(1024).describe("the AK's signature of certifyInfo (TPMT_SIGNATURE, base64)"),
}).strict().describe("evidence that the CSR's key was made inside a TPM whose EK chains to a trusted EK CA (fleet-agent enroll --tpm)");
export type TpmEvidence = z.infer<typeof tpmEvidenceInput>;

/** What the service verified; kept on the device and shown in the lobby. */
export interface VerifiedTpm {
  /** SHA-256 (hex) of the EK certificate's SubjectPublicKeyInfo: what the pre-authorized list's ekHash names */
  ekHash: string;
  ekIssuer: string;
  /** the TPM manufacturer id of the EK certificate (TCG EK profile: subjectAltName 2.23.133.2.1), when it says one */
  manufacturer: string | null;
  trustedCaId: string;
  trustedCaName: string;
}

function parseEk(pem: string, field: string): ParsedCertificate {
  try {
    return parseSingleCertificate(pem, field);
  } catch (err) {
    if (err instanceof PkiInputError) throw invalidField(field, err.message);
    throw err;
  }
}

/** SHA-256 (hex) of an EK certificate's SubjectPublicKeyInfo (`openssl x509 -pubkey | openssl pkey -pubin -outform DER | sha256sum`). */
export function ekHashOf(ek: ParsedCertificate): string {
  return createHash("sha256").update(ek.publicKey.export({ type: "spki", format: "der" })).digest("hex");
}

function manufacturerOf(ek: ParsedCertificate): string | null {
  const match = /2\.23\.133\.2\.1=#0C([0-9A-F]{2})([0-9A-F]+)/i.exec(ek.node.subjectAltName ?? "");
  if (!match) return null;
  return Buffer.from(match[2].slice(0, parseInt(match[1], 16) * 2), "hex").toString("utf8");
}

function tpmPublic(value: string, field: string): TpmPublicKey {
  try {
    return parseTpmPublic(Buffer.from(value, "base64"), field);
  } catch (err) {
    if (err instanceof TpmStructureError) throw invalidField(field, err.message);
    throw err;
  }
}

const has = (attributes: number, ...bits: number[]) => bits.every((bit) => (attributes & bit) === bit);

/** The AK must be a restricted signing key that cannot leave its TPM (else what it signs proves nothing). */
function attestationKey(value: string, field: string): TpmPublicKey {
  const ak = tpmPublic(value, field);
  if (!has(ak.attributes, TPMA.fixedTPM, TPMA.fixedParent, TPMA.restricted, TPMA.sign)) {
    throw invalidField(field, "is not a restricted signing key fixed to its TPM (fixedTPM, fixedParent, restricted, sign)");
  }
  return ak;
}

/** agent.tpmChallenge: a credential only the TPM holding this EK with this AK loaded can activate. */
export function tpmChallenge(serviceKey: Uint8Array, input: z.infer<typeof tpmChallengeInput>, now = Date.now()) {
  const ek = parseEk(input.ekCertificate, "ekCertificate");
  if (ek.publicKey.asymmetricKeyType !== "rsa") throw invalidField("ekCertificate", "only RSA endorsement keys are supported (the TPM's RSA EK certificate, NV index 0x01c00002)");
  const ak = attestationKey(input.akPublic, "akPublic");
  const expiresAt = Math.floor(now / 1000) + CHALLENGE_SECONDS;
  const secret = challengeSecret(serviceKey, ekHashOf(ek), ak.name, expiresAt);
  return { credential: makeCredential(ek.publicKey, ak.name, secret).toString("base64"), expiresAt };
}

/** Walks from the EK certificate through the sent intermediates to a trusted CA; null when there is no such path. */
function trustedPath(ek: ParsedCertificate, intermediates: ParsedCertificate[], trusted: { id: string; name: string; cert: ParsedCertificate }[], now: Date) {
  const valid = (c: ParsedCertificate) => c.info.notBefore <= now && c.info.notAfter > now;
  let current = ek;
  for (let depth = 0; depth <= intermediates.length; depth++) {
    if (!valid(current)) return null;
    const anchor = trusted.find((t) => valid(t.cert) && isIssuedBy(current, t.cert));
    if (anchor) return anchor;
    const next = intermediates.find((c) => c.info.isCa && c !== current && isIssuedBy(current, c));
    if (!next) return null;
    current = next;
  }
  return null;
}

/**
 * Verifies the evidence for a CSR whose key fingerprint (SHA-256 of its SPKI) is `csrKeyFingerprint`.
 * Throws a 400 naming a malformed field, or a 403 saying what the evidence fails to prove.
 */
export async function verifyTpmEvidence(db: DbTx, serviceKey: Uint8Array, organizationId: string, evidence: TpmEvidence, csrKeyFingerprint: string, now = new Date()): Promise<VerifiedTpm> {
  const ek = parseEk(evidence.ekCertificate, "tpm.ekCertificate");
  const intermediates = (evidence.ekChain ?? []).map((pem, i) => parseEk(pem, `tpm.ekChain.${i}`));
  const ekHash = ekHashOf(ek);

  const rows = await db.trustedEkCa.findMany({ where: { organizationId }, select: { id: true, name: true, certificatePem: true } });
  if (rows.length === 0) throw forbidden("The organization trusts no TPM EK manufacturer CA yet (POST /tpm-ek-cas): a TPM cannot be attested; the device was not enrolled");
  const trusted = rows.map((r) => ({ id: r.id, name: r.name, cert: parseSingleCertificate(r.certificatePem, "trusted EK CA") }));
  const anchor = trustedPath(ek, intermediates, trusted, now);
  if (!anchor) {
    throw forbidden(`The TPM's EK certificate (issuer "${ek.info.issuer}") does not chain to an EK manufacturer CA the organization trusts, or is outside its validity; the device was not enrolled`);
  }

  const ak = attestationKey(evidence.akPublic, "tpm.akPublic");
  if (evidence.challengeExpiresAt * 1000 <= now.getTime()) throw forbidden("The TPM challenge has expired: ask for a new one (agent.tpmChallenge) and answer it within 5 minutes");
  const expected = challengeSecret(serviceKey, ekHash, ak.name, evidence.challengeExpiresAt);
  if (!secretMatches(expected, Buffer.from(evidence.activatedSecret, "base64"))) {
    throw forbidden("The TPM did not activate the challenge's credential: the attestation key is not shown to be in the TPM of this endorsement key");
  }

  let signature: Buffer;
  let certified;
  try {
    signature = parseEcdsaSignature(Buffer.from(evidence.certifySignature, "base64"), "tpm.certifySignature");
    certified = parseCertifyInfo(Buffer.from(evidence.certifyInfo, "base64"));
  } catch (err) {
    if (err instanceof TpmStructureError) throw invalidField(err.message.startsWith("tpm.certifySignature") ? "tpm.certifySignature" : "tpm.certifyInfo", err.message);
    throw err;
  }
  if (!verify("sha256", Buffer.from(evidence.certifyInfo, "base64"), { key: ak.key, dsaEncoding: "ieee-p1363" }, signature)) {
    throw forbidden("The TPM's certification of the device key is not signed by the attestation key");
  }
  const key = tpmPublic(evidence.keyPublic, "tpm.keyPublic");
  if (!certified.certifiedName.equals(key.name)) throw forbidden("The TPM's certification names another key than tpm.keyPublic");
  if (!has(key.attributes, TPMA.fixedTPM, TPMA.fixedParent, TPMA.sensitiveDataOrigin, TPMA.sign)) {
    throw forbidden("The certified key was not created inside the TPM (fixedTPM, fixedParent and sensitiveDataOrigin are required): a key made outside a TPM cannot be attested");
  }
  if (createHash("sha256").update(key.spki).digest("hex") !== csrKeyFingerprint) {
    throw forbidden("The CSR's key is not the key the TPM certified: a software key cannot claim to be held by a TPM");
  }
  return { ekHash, ekIssuer: ek.info.issuer, manufacturer: manufacturerOf(ek), trustedCaId: anchor.id, trustedCaName: anchor.name };
}
