/**
 * CA certificates: generate a root, validate an uploaded CA, renew a root.
 */
import { PkiInputError } from "./errors.js";
import { parseCertificateDer, parseCertificatePems, parseSingleCertificate, isIssuedBy, signatureVerifies, type CertificateInfo } from "./inspect.js";
import { assertIsCa, assertKeyMatches, assertValidAt, keyIdentifierOf } from "./issuer.js";
import { generatePrivateKeyPem, loadSigningKey, readPrivateKey, spkiDerOf, type KeyAlgorithm, type SigningKey } from "./keys.js";
import { checkCommonName, checkValidityDays, randomSerialNumber, resolveNow, validityWindow } from "./params.js";
import { toArrayBuffer } from "./pem.js";
import { x509 } from "./provider.js";

/** Longest chain (CA + issuers) we accept in an upload; real ones have 1-3. */
export const MAX_CHAIN_LENGTH = 8;

export interface GenerateCaParams {
  commonName: string;
  validityDays: number;
  keyAlgorithm: KeyAlgorithm;
  now?: Date | undefined;
}

export interface GeneratedCa {
  certificatePem: string;
  /** Unencrypted PKCS#8 PEM: encrypt it at rest. */
  privateKeyPem: string;
  inspected: CertificateInfo;
}

/**
 * Creates a self-signed root CA: basicConstraints cA (critical), keyUsage
 * keyCertSign + cRLSign + digitalSignature (critical), subject and authority
 * key identifiers, random serial. Valid from `now` - 5 minutes.
 */
export async function generateSelfSignedCa(params: GenerateCaParams): Promise<GeneratedCa> {
  const commonName = checkCommonName(params.commonName, "commonName");
  const validityDays = checkValidityDays(params.validityDays);
  const now = resolveNow(params.now);
  const privateKeyPem = await generatePrivateKeyPem(params.keyAlgorithm);
  const key = await loadSigningKey(privateKeyPem);
  const spki = toArrayBuffer(spkiDerOf(key.publicKey));
  const ski = await x509.SubjectKeyIdentifierExtension.create(spki);
  const extensions = [
    new x509.BasicConstraintsExtension(true, undefined, true),
    new x509.KeyUsagesExtension(
      x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign | x509.KeyUsageFlags.digitalSignature,
      true,
    ),
    ski,
    // Optional for a root, but lets tools link renewed roots and issued certs by key.
    new x509.AuthorityKeyIdentifierExtension(ski.keyId),
  ];
  const inspected = await selfSign(new x509.Name([{ CN: [commonName] }]), key, now, validityDays, extensions);
  return { certificatePem: inspected.certificatePem, privateKeyPem, inspected };
}

async function selfSign(
  subject: x509.Name,
  key: SigningKey,
  now: Date,
  validityDays: number,
  extensions: x509.Extension[],
): Promise<CertificateInfo> {
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: randomSerialNumber(),
    subject,
    issuer: subject,
    ...validityWindow(now, validityDays),
    publicKey: toArrayBuffer(spkiDerOf(key.publicKey)),
    signingKey: key.privateKey,
    signingAlgorithm: key.signingAlgorithm,
    extensions,
  });
  return parseCertificateDer(new Uint8Array(cert.rawData)).info;
}

export interface CaUploadParams {
  /** The CA certificate, optionally followed by its issuers (PEM blocks, CA first). */
  certificatePem: string;
  /** The CA's private key: PKCS#8, SEC1 ("EC PRIVATE KEY") or PKCS#1 ("RSA PRIVATE KEY"), unencrypted. */
  privateKeyPem?: string | null | undefined;
  now?: Date | undefined;
}

export interface CaUpload {
  /** The CA certificate (first PEM block). */
  certificate: CertificateInfo;
  /** Its issuers in order, normalized; empty for a root. The CA itself is not repeated here. */
  chainPems: string[];
  /** The key as normalized PKCS#8 PEM, or null when none was uploaded. */
  privateKeyPem: string | null;
}

/**
 * Validates an uploaded CA. Refuses, with a PkiInputError saying why:
 * unparsable input, a first certificate that is not a CA or not valid at
 * `now`, a chain where some certificate is not issued by the next one, and a
 * private key that does not match the CA certificate. The validity of the
 * issuers is not checked: whether devices trust them is their business.
 */
export function parseCaUpload(params: CaUploadParams): CaUpload {
  const now = resolveNow(params.now);
  const certificates = parseCertificatePems(params.certificatePem, "certificate");
  if (certificates.length > MAX_CHAIN_LENGTH) {
    throw new PkiInputError(`certificate chain is too long (${certificates.length} certificates, at most ${MAX_CHAIN_LENGTH})`);
  }
  const [ca, ...issuers] = certificates;
  if (!ca) throw new PkiInputError("not a PEM certificate");

  assertIsCa(ca, "certificate");
  assertValidAt(ca, now, "certificate");
  // A lone root must at least carry a valid self-signature.
  if (issuers.length === 0 && ca.info.subject === ca.info.issuer && !signatureVerifies(ca.node, ca.publicKey)) {
    throw new PkiInputError("certificate is self-issued but its signature does not verify");
  }
  certificates.slice(0, -1).forEach((child, index) => {
    const parent = certificates[index + 1]!;
    if (!isIssuedBy(child, parent)) {
      throw new PkiInputError(
        `certificate chain is broken: certificate #${index + 1} (${child.info.subject}) is not issued by certificate #${index + 2} (${parent.info.subject})`,
      );
    }
    assertIsCa(parent, `chain certificate #${index + 2} (${parent.info.subject})`);
  });

  let privateKeyPem: string | null = null;
  if (params.privateKeyPem != null && params.privateKeyPem.trim() !== "") {
    const key = readPrivateKey(params.privateKeyPem);
    assertKeyMatches(ca, key, "private key does not match the certificate");
    privateKeyPem = key.pkcs8Pem;
  }
  return { certificate: ca.info, chainPems: issuers.map((c) => c.info.certificatePem), privateKeyPem };
}

export interface RenewCaParams {
  certificatePem: string;
  privateKeyPem: string;
  validityDays: number;
  now?: Date | undefined;
}

/**
 * Re-issues a self-signed CA with the same subject, key and extensions, a new
 * serial and a new validity period. Because name and key are unchanged,
 * certificates issued under the old CA keep verifying against the new one.
 * Expired CAs may be renewed (that is usually why one renews).
 */
export async function renewCa(params: RenewCaParams): Promise<{ certificatePem: string; inspected: CertificateInfo }> {
  const validityDays = checkValidityDays(params.validityDays);
  const now = resolveNow(params.now);
  const original = parseSingleCertificate(params.certificatePem);
  assertIsCa(original, "certificate");
  if (!original.info.isSelfSigned) throw new PkiInputError("only self-signed CAs can be renewed here");
  const key = await loadSigningKey(params.privateKeyPem);
  assertKeyMatches(original, key, "private key does not match the certificate");

  // Keep every extension, except that an authorityKeyIdentifier is rebuilt
  // from the key: the issuer+serial form would point at the old serial.
  const extensions = original.cert.extensions.filter((e) => e.type !== "2.5.29.35");
  if (extensions.length !== original.cert.extensions.length) {
    extensions.push(new x509.AuthorityKeyIdentifierExtension(await keyIdentifierOf(original)));
  }
  const inspected = await selfSign(original.cert.subjectName, key, now, validityDays, extensions);
  return { certificatePem: inspected.certificatePem, inspected };
}
