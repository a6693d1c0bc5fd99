// The key fingerprint the lobby shows and the pre-authorized list matches: SHA-256 (lowercase
// hex) of the DER SubjectPublicKeyInfo. A fingerprint of the key, not of a certificate: the
// device enrolls with a CSR, and its key (what the factory records) stays the same across
// certificate renewals. `openssl pkey -pubin -outform DER | sha256sum` gives the same value.
import * as x509 from "@peculiar/x509";
import { sha256Hex } from "../../lib/crypto.js";

/** The fingerprint of the key in a PKCS#10 CSR (PEM), or null when it cannot be read (the issuing step then refuses the CSR with the reason). */
export function csrKeyFingerprint(csrPem: string): string | null {
  try {
    const csr = new x509.Pkcs10CertificateRequest(csrPem.trim());
    return sha256Hex(Buffer.from(csr.publicKey.rawData));
  } catch {
    return null;
  }
}

/** The fingerprint of a "PUBLIC KEY" or "CERTIFICATE" PEM's key, or null. */
export function pemKeyFingerprint(pem: string): string | null {
  try {
    if (pem.includes("CERTIFICATE")) return sha256Hex(Buffer.from(new x509.X509Certificate(pem.trim()).publicKey.rawData));
    return sha256Hex(Buffer.from(new x509.PublicKey(pem.trim()).rawData));
  } catch {
    return null;
  }
}

/** A SHA-256 fingerprint as given (hex, any case, colons allowed, optional "sha256:" prefix) in canonical form, or null. */
export function normalizeFingerprint(value: string): string | null {
  const hex = value.trim().replace(/^sha256:/i, "").replace(/:/g, "").toLowerCase();
  return /^[0-9a-f]{64}$/.test(hex) ? hex : null;
}
