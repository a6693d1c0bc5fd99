/**
 * Fleet PKI: CA certificates, device certificates and CRLs on top of
 * @peculiar/x509 and Node's WebCrypto. Pure functions: no I/O, no child
 * processes; persistence is the caller's job.
 *
 * Every refusal of user input is a {@link PkiInputError} with a readable message.
 */
export { PkiInputError } from "./errors.js";
export { KEY_ALGORITHMS, type KeyAlgorithm } from "./keys.js";
export { fingerprintOfDer } from "./pem.js";
export { CLOCK_SKEW_MS } from "./params.js";
export { inspectCertificate, verifySignedBy, type CertificateInfo } from "./inspect.js";
export {
  generateSelfSignedCa,
  parseCaUpload,
  renewCa,
  type CaUpload,
  type CaUploadParams,
  type GenerateCaParams,
  type GeneratedCa,
  type RenewCaParams,
} from "./ca.js";
export {
  issueDeviceCertificate,
  issueDeviceCertificateFromPublicKey,
  type IssueDeviceCertificateParams,
  type IssueFromPublicKeyParams,
  type IssuedDeviceCertificate,
} from "./device.js";
export {
  buildCrl,
  DEFAULT_CRL_VALIDITY_DAYS,
  REVOCATION_REASON_CODES,
  REVOCATION_REASONS,
  type BuildCrlParams,
  type CrlEntryInput,
  type RevocationReason,
} from "./crl.js";
export { certificateVerifier, importCertificatePublicKey, jwsAlgorithmOf, publicKeyJwkOf, type JwsAlgorithm } from "./jwt.js";
