/**
 * Certificate parsing and inspection.
 *
 * Every certificate is parsed twice: by @peculiar/x509 (names, extensions,
 * and the object we later sign with) and by node:crypto (OpenSSL), which
 * gives synchronous signature checks and key details. A certificate that
 * either parser rejects is refused, which also keeps us away from DER that
 * only one implementation tolerates.
 */
import { X509Certificate as NodeX509Certificate, type KeyObject } from "node:crypto";
import { PkiInputError } from "./errors.js";
import { describeKey, keyLabel, publicKeyFromSpki } from "./keys.js";
import { decodePemBlocksOf, fingerprintOfDer, toPem } from "./pem.js";
import { x509 } from "./provider.js";

export interface CertificateInfo {
  /** RFC 4514 style, e.g. "CN=Fleet Root CA, O=Example". */
  subject: string;
  issuer: string;
  /** Lowercase hex without colons or sign padding, e.g. "4f3a...". */
  serialNumber: string;
  /** "ECDSA P-256", "ECDSA P-384", "RSA 2048", "Ed25519" ... */
  keyAlgorithm: string;
  /** OpenSSL-style name: "ecdsa-with-SHA256", "sha256WithRSAEncryption", "Ed25519" ... */
  signatureAlgorithm: string;
  /** "DNS:host", "IP:10.0.0.1", "URI:urn:x", "email:a@b" ... */
  subjectAltNames: string[];
  /** SHA-256 of the DER, lowercase hex without colons. */
  fingerprint: string;
  notBefore: Date;
  notAfter: Date;
  /** basicConstraints cA is true. */
  isCa: boolean;
  /** Subject equals issuer AND the signature verifies with the certificate's own key. */
  isSelfSigned: boolean;
  /** The certificate re-encoded as a single, canonical PEM block. */
  certificatePem: string;
}

/** A certificate parsed by both libraries, plus its inspected facts. */
export interface ParsedCertificate {
  cert: x509.X509Certificate;
  node: NodeX509Certificate;
  publicKey: KeyObject;
  info: CertificateInfo;
}

const CERTIFICATE_LABELS = ["CERTIFICATE", "X509 CERTIFICATE", "TRUSTED CERTIFICATE"];

/** Parses every certificate in a PEM text (a single certificate or a chain). */
export function parseCertificatePems(pem: unknown, what = "certificate"): ParsedCertificate[] {
  const ders = decodePemBlocksOf(pem, what, CERTIFICATE_LABELS);
  return ders.map((der, index) => parseCertificateDer(der, ders.length > 1 ? `${what} #${index + 1}` : what));
}

/** Parses a PEM text that must hold exactly one certificate. */
export function parseSingleCertificate(pem: unknown, what = "certificate"): ParsedCertificate {
  const all = parseCertificatePems(pem, what);
  if (all.length !== 1) {
    throw new PkiInputError(`${what} must contain exactly one certificate, found ${all.length}`);
  }
  return all[0] as ParsedCertificate;
}

export function parseCertificateDer(der: Uint8Array<ArrayBuffer>, what = "certificate"): ParsedCertificate {
  let cert: x509.X509Certificate;
  let node: NodeX509Certificate;
  try {
    cert = new x509.X509Certificate(der);
    node = new NodeX509Certificate(der);
  } catch (cause) {
    throw new PkiInputError(`${what} could not be parsed as an X.509 certificate`, { cause });
  }
  // x509 decodes fields lazily: read all of them now so that a malformed
  // extension surfaces here, as a PkiInputError, and not somewhere later.
  try {
    const publicKey = publicKeyFromSpki(cert.publicKey.rawData);
    const subject = cert.subject;
    const issuer = cert.issuer;
    const info: CertificateInfo = {
      subject,
      issuer,
      serialNumber: cert.serialNumber.toLowerCase(),
      keyAlgorithm: keyLabel(describeKey(publicKey)),
      signatureAlgorithm: signatureAlgorithmName(cert.signatureAlgorithm),
      subjectAltNames: subjectAltNamesOf(cert),
      fingerprint: fingerprintOfDer(der),
      notBefore: cert.notBefore,
      notAfter: cert.notAfter,
      isCa: cert.getExtension(x509.BasicConstraintsExtension)?.ca === true,
      isSelfSigned: subject === issuer && signatureVerifies(node, publicKey),
      certificatePem: toPem(der, "CERTIFICATE"),
    };
    return { cert, node, publicKey, info };
  } catch (cause) {
    const detail = cause instanceof PkiInputError ? cause.message : "a field or extension could not be parsed";
    throw new PkiInputError(`${what}: ${detail}`, { cause });
  }
}

/** Inspects a single PEM certificate. Throws PkiInputError for malformed input. */
export function inspectCertificate(pem: string): CertificateInfo {
  return parseSingleCertificate(pem).info;
}

/** True when the certificate's signature verifies with `issuerKey` (signature only, no dates or names). */
export function signatureVerifies(certificate: NodeX509Certificate, issuerKey: KeyObject): boolean {
  try {
    return certificate.verify(issuerKey);
  } catch {
    return false; // unsupported or mismatched algorithm: certainly not signed by this key
  }
}

/** `child` names `issuer` as its issuer and carries a signature made by the issuer's key. */
export function isIssuedBy(child: ParsedCertificate, issuer: ParsedCertificate): boolean {
  return child.info.issuer === issuer.info.subject && signatureVerifies(child.node, issuer.publicKey);
}

/**
 * Checks that `certPem` was issued by `issuerPem`: issuer name matches the
 * issuer's subject and the signature verifies with the issuer's public key.
 * Validity dates are not considered. Malformed PEM throws PkiInputError.
 */
export async function verifySignedBy(certPem: string, issuerPem: string): Promise<boolean> {
  const child = parseSingleCertificate(certPem);
  const issuer = parseSingleCertificate(issuerPem, "issuer certificate");
  return isIssuedBy(child, issuer);
}

/** Maps x509's WebCrypto view of the signature algorithm to the usual OpenSSL name. */
function signatureAlgorithmName(webAlgorithm: object): string {
  // Typed loosely on purpose: x509 declares it with DOM types that a Node-only lib setting lacks.
  const algorithm = webAlgorithm as { name: string; hash?: string | { name?: string } };
  const hashName = typeof algorithm.hash === "string" ? algorithm.hash : algorithm.hash?.name;
  const hash = hashName?.replace("-", "").toUpperCase(); // "SHA-256" -> "SHA256"
  switch (algorithm.name.toUpperCase()) {
    case "ECDSA":
      return hash ? `ecdsa-with-${hash}` : "ecdsa";
    case "RSASSA-PKCS1-V1_5":
      return hash ? `${hash.toLowerCase()}WithRSAEncryption` : "rsaEncryption";
    case "RSA-PSS":
      return "rsassaPss";
    case "ED25519":
      return "Ed25519";
    default:
      return algorithm.name; // x509 reports unknown algorithms by OID
  }
}

const SAN_PREFIXES: Record<string, string> = {
  dns: "DNS",
  ip: "IP",
  url: "URI",
  email: "email",
  dn: "DirName",
  guid: "GUID",
  upn: "UPN",
  id: "RID",
};

function subjectAltNamesOf(cert: x509.X509Certificate): string[] {
  const extension = cert.getExtension(x509.SubjectAlternativeNameExtension);
  if (!extension) return [];
  return extension.names.items.map((name) => `${SAN_PREFIXES[name.type] ?? name.type}:${name.value}`);
}
