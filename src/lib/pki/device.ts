/**
 * Device (client) certificates, issued by a fleet CA.
 *
 * Devices only choose their key: the subject is always CN=<deviceId> and the
 * extensions are ours. Anything else a CSR asks for (SANs, key usages, CA
 * flag ...) is ignored on purpose.
 */
import { PkiInputError } from "./errors.js";
import { parseCertificateDer, type CertificateInfo } from "./inspect.js";
import { assertValidAt, loadIssuer } from "./issuer.js";
import { describeKey, keyLabel, MIN_RSA_BITS, publicKeyFromSpki } from "./keys.js";
import { checkCommonName, checkValidityDays, randomSerialNumber, resolveNow, validityWindow } from "./params.js";
import { decodePemBlocks, decodePemBlocksOf, toArrayBuffer } from "./pem.js";
import { x509 } from "./provider.js";

interface DeviceCertificateBase {
  caCertificatePem: string;
  caPrivateKeyPem: string;
  /** Becomes the subject: CN=<deviceId>. 1-64 characters. */
  deviceId: string;
  validityDays: number;
  now?: Date | undefined;
}

export interface IssueDeviceCertificateParams extends DeviceCertificateBase {
  /** PKCS#10 certificate request ("CERTIFICATE REQUEST" PEM). */
  csrPem: string;
}

export interface IssueFromPublicKeyParams extends DeviceCertificateBase {
  /** A "PUBLIC KEY" (SPKI) PEM, or a "CERTIFICATE" PEM whose key is reused. */
  publicKeyPem: string;
}

export interface IssuedDeviceCertificate {
  certificatePem: string;
  inspected: CertificateInfo;
}

/** Issues a device certificate for the key in a CSR, after checking the CSR's signature. */
export async function issueDeviceCertificate(params: IssueDeviceCertificateParams): Promise<IssuedDeviceCertificate> {
  const [der, ...extra] = decodePemBlocksOf(params.csrPem, "certificate request", [
    "CERTIFICATE REQUEST",
    "NEW CERTIFICATE REQUEST",
  ]);
  if (!der || extra.length > 0) throw new PkiInputError("certificate request must contain exactly one CSR");
  let csr: x509.Pkcs10CertificateRequest;
  let spki: ArrayBuffer;
  try {
    csr = new x509.Pkcs10CertificateRequest(der);
    spki = csr.publicKey.rawData;
  } catch (cause) {
    throw new PkiInputError("certificate request could not be parsed as PKCS#10", { cause });
  }
  // Check the key first: it gives a clearer message than a failed signature check.
  assertAcceptableDeviceKey(spki);
  // The signature proves the requester holds the private key.
  let signatureOk = false;
  try {
    signatureOk = await csr.verify();
  } catch {
    signatureOk = false; // unknown or inconsistent algorithm
  }
  if (!signatureOk) throw new PkiInputError("CSR signature is invalid");
  return issue(spki, params);
}

/**
 * Issues a device certificate for an already known public key, e.g. to renew
 * a device certificate without a new CSR. Proof of possession is the
 * caller's responsibility here (typically the device authenticated with the
 * previous certificate).
 */
export async function issueDeviceCertificateFromPublicKey(params: IssueFromPublicKeyParams): Promise<IssuedDeviceCertificate> {
  const [block, ...extra] = decodePemBlocks(params.publicKeyPem, "public key");
  if (!block || extra.length > 0) throw new PkiInputError("public key must contain exactly one PEM block");
  let spki: ArrayBuffer;
  if (block.label === "PUBLIC KEY") {
    spki = toArrayBuffer(block.der);
  } else if (block.label === "CERTIFICATE") {
    spki = parseCertificateDer(block.der, "previous certificate").cert.publicKey.rawData;
  } else {
    throw new PkiInputError(`public key must be a PEM PUBLIC KEY or CERTIFICATE, found a PEM ${block.label} block`);
  }
  assertAcceptableDeviceKey(spki);
  return issue(spki, params);
}

/** ECDSA P-256/P-384, Ed25519 and RSA >= 2048: what device TLS stacks and our JWT verification support. */
function assertAcceptableDeviceKey(spki: ArrayBuffer): void {
  const kind = describeKey(publicKeyFromSpki(new Uint8Array(spki)));
  const ok =
    (kind.type === "ec" && (kind.curve === "P-256" || kind.curve === "P-384")) ||
    kind.type === "ed25519" ||
    (kind.type === "rsa" && kind.bits >= MIN_RSA_BITS);
  if (!ok) {
    throw new PkiInputError(
      `device key type ${keyLabel(kind)} is not accepted (use ECDSA P-256/P-384, Ed25519 or RSA >= ${MIN_RSA_BITS})`,
    );
  }
}

async function issue(spki: ArrayBuffer, params: DeviceCertificateBase): Promise<IssuedDeviceCertificate> {
  const deviceId = checkCommonName(params.deviceId, "deviceId");
  const validityDays = checkValidityDays(params.validityDays);
  const now = resolveNow(params.now);
  const { ca, key, keyId } = await loadIssuer(params.caCertificatePem, params.caPrivateKeyPem);
  assertValidAt(ca, now, "CA certificate");

  // Never outlive the CA (the certificate would be unusable after it), and
  // never start before it (some validators check nesting).
  const window = validityWindow(now, validityDays);
  const notBefore = new Date(Math.max(window.notBefore.getTime(), ca.info.notBefore.getTime()));
  const notAfter = new Date(Math.min(window.notAfter.getTime(), ca.info.notAfter.getTime()));

  const isRsa = describeKey(publicKeyFromSpki(new Uint8Array(spki))).type === "rsa";
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: randomSerialNumber(),
    subject: new x509.Name([{ CN: [deviceId] }]),
    // The CA's own encoded name, so issuer/subject match byte for byte.
    issuer: ca.cert.subjectName,
    notBefore,
    notAfter,
    publicKey: spki,
    signingKey: key.privateKey,
    signingAlgorithm: key.signingAlgorithm,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(
        // keyEncipherment only makes sense for RSA (RSA key transport in TLS 1.2).
        x509.KeyUsageFlags.digitalSignature | (isRsa ? x509.KeyUsageFlags.keyEncipherment : 0),
        true,
      ),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.clientAuth]),
      new x509.AuthorityKeyIdentifierExtension(keyId),
      await x509.SubjectKeyIdentifierExtension.create(spki),
    ],
  });
  const inspected = parseCertificateDer(new Uint8Array(cert.rawData)).info;
  return { certificatePem: inspected.certificatePem, inspected };
}
