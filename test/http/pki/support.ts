// Helpers for the PKI HTTP tests: certificates and CSRs built the way an outside party would
// (with @peculiar/x509 directly, dated from today), devices, and a recorder of every response
// so that each file can prove no private key ever left the server.
import { createHash, randomBytes } from "node:crypto";
import { expect } from "vitest";
import { generateKeys, makeCsr, subtle, x509, type DeviceKeyType } from "../../unit/pki/fixtures.js";
import type { ApiResponse, Harness } from "../../support/harness.js";
import { issueCertificateForDevice } from "../../../src/modules/devices/certificates/service.js";

export { makeCsr, x509 };

export const DAY = 24 * 60 * 60 * 1000;

export function sha256OfPem(pem: string): string {
  return createHash("sha256").update(new Uint8Array(x509.PemConverter.decodeFirst(pem))).digest("hex");
}

export interface TestCa {
  certificatePem: string;
  privateKeyPem: string;
  cert: x509.X509Certificate;
  keys: CryptoKeyPair;
}

type CryptoKeyPair = Awaited<ReturnType<typeof generateKeys>>;

export interface CaOptions {
  subject?: string;
  notBefore?: Date;
  notAfter?: Date;
  /** basicConstraints cA; null leaves the extension out */
  isCa?: boolean | null;
  keyUsage?: number;
  /** sign with this CA instead of self-signing */
  issuer?: TestCa;
  keyType?: DeviceKeyType;
}

/** A CA certificate (self-signed unless `issuer` is given) with its PKCS#8 key. */
export async function makeCa(options: CaOptions = {}): Promise<TestCa> {
  const now = Date.now();
  const keys = await generateKeys(options.keyType ?? "ECDSA-P256");
  const subject = options.subject ?? `CN=Uploaded CA ${Math.random().toString(36).slice(2, 8)}, O=Customer`;
  const extensions: x509.Extension[] = [await x509.SubjectKeyIdentifierExtension.create(keys.publicKey)];
  if (options.isCa !== null) extensions.push(new x509.BasicConstraintsExtension(options.isCa ?? true, undefined, true));
  extensions.push(new x509.KeyUsagesExtension(options.keyUsage ?? (x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign), true));
  const signer = options.issuer;
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: "4" + randomBytes(8).toString("hex").slice(1), // positive, no padding byte
    subject,
    issuer: signer ? signer.cert.subjectName : subject,
    notBefore: options.notBefore ?? new Date(now - DAY),
    notAfter: options.notAfter ?? new Date(now + 365 * DAY),
    publicKey: keys.publicKey,
    signingKey: (signer?.keys ?? keys).privateKey,
    signingAlgorithm: { name: "ECDSA", hash: "SHA-256" },
    extensions,
  });
  const pkcs8 = await subtle.exportKey("pkcs8", keys.privateKey);
  return { certificatePem: cert.toString("pem"), privateKeyPem: x509.PemConverter.encode(pkcs8, "PRIVATE KEY"), cert, keys };
}

export async function createDevice(h: Harness, organizationId: string, name = "device"): Promise<string> {
  const device = await h.services.prisma.device.create({ data: { organizationId, name } });
  return device.id;
}

/** What enrollment will do: a CSR made on the "device" and issueCertificateForDevice. */
export async function enrollCertificate(h: Harness, organizationId: string, deviceId: string, options: { validityDays?: number; keyType?: DeviceKeyType } = {}) {
  const { keys, csrPem } = await makeCsr(options.keyType ?? "ECDSA-P256");
  const issued = await issueCertificateForDevice(h.services.prisma, h.services.secrets, {
    organizationId,
    deviceId,
    csrPem,
    ...(options.validityDays ? { validityDays: options.validityDays } : {}),
  });
  return { ...issued, keys, csrPem };
}

/** Wraps h.api so that every response text of the file is kept for the leak check. */
export function recordResponses(h: Harness): string[] {
  const texts: string[] = [];
  const api = h.api.bind(h);
  h.api = (async (method: string, path: string, opts?: Parameters<Harness["api"]>[2]) => {
    const res: ApiResponse = await api(method, path, opts);
    texts.push(res.text);
    return res;
  }) as Harness["api"];
  return texts;
}

/** No response, log line or audit entry of the file holds a private key. */
export async function expectNoPrivateKeyLeaked(h: Harness, responses: string[], privateKeyPems: string[]) {
  expect(responses.length).toBeGreaterThan(0);
  const audit = JSON.stringify(await h.services.prisma.auditEntry.findMany({ select: { changes: true, message: true } }));
  const bodies = privateKeyPems.map((pem) => pem.replace(/-----[^-]+-----|\s+/g, "").slice(48, 112)); // past the ASN.1 header: key material
  for (const [where, text] of [["responses", responses.join("\n")], ["logs", h.logs.join("\n")], ["audit", audit]] as const) {
    // Error messages may name a "PRIVATE KEY block"; a PEM key itself starts with BEGIN.
    expect(text.match(/-----BEGIN [A-Z ]*PRIVATE KEY-----/)?.[0] ?? "", `a PEM private key in ${where}`).toBe("");
    for (const body of bodies) expect(text.includes(body), `${where} contain a private key`).toBe(false);
  }
  const stored = await h.services.prisma.caCertificate.findMany({ select: { privateKeyEncrypted: true } });
  for (const row of stored) {
    if (row.privateKeyEncrypted) expect(row.privateKeyEncrypted).toMatch(/^v1:[^:]+:[^:]+:[^:]+$/);
    expect(row.privateKeyEncrypted ?? "").not.toMatch(/BEGIN/);
  }
}

/** The PKCS#8 key of every CA stored in the database (decrypted), for the leak check. */
export async function storedCaKeys(h: Harness): Promise<string[]> {
  const rows = await h.services.prisma.caCertificate.findMany({ select: { privateKeyEncrypted: true } });
  return rows.flatMap((r) => (r.privateKeyEncrypted ? [h.services.secrets.decrypt(r.privateKeyEncrypted)] : []));
}
