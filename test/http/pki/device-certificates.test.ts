// Device certificates: issued from a CSR made here (what enrollment will do), read through
// spec op 16 and the list, revoked with each reason, renewed; the functions enrollment and
// device authentication call; and the security suite on every operation.
import { createTRPCClient, httpBatchLink } from "@trpc/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AppRouter } from "../../../src/index.js";
import { REVOCATION_REASONS } from "../../../src/lib/pki/index.js";
import { issueCertificateForDevice, revokeAllCertificatesOfDevice } from "../../../src/modules/devices/certificates/service.js";
import { findValidCertificateByFingerprint } from "../../../src/trpc/device-auth.js";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { expectSecured } from "../../support/security.js";
import {
  createDevice,
  DAY,
  enrollCertificate,
  expectNoPrivateKeyLeaked,
  makeCsr,
  recordResponses,
  sha256OfPem,
  storedCaKeys,
  x509,
} from "./support.js";

let h: Harness;
let acme: Tenant;
let globex: Tenant;
let responses: string[];
let ca: any;
let deviceId: string;
let otherDeviceId: string;

beforeAll(async () => {
  h = await createHarness();
  responses = recordResponses(h);
  acme = await h.createTenant("Acme Devices");
  globex = await h.createTenant("Globex Devices");
  ca = (await h.api("POST", "/api/v1/ca-certificates/generate", { key: acme.key, body: { name: "Fleet", commonName: "Acme Fleet CA" } })).body;
  await h.api("POST", "/api/v1/ca-certificates/generate", { key: globex.key, body: { name: "Fleet", commonName: "Globex Fleet CA" } });
  deviceId = await createDevice(h, acme.org.id, "gateway-1");
  otherDeviceId = await createDevice(h, acme.org.id, "gateway-2");
});
afterAll(() => h?.close());

const SPEC_FIELDS = ["id", "deviceId", "fingerprint", "subject", "issuer", "notBefore", "notAfter", "revoked", "createdAt"];
const certPath = (device: string, cert: string, action = "") => `/api/v1/devices/${device}/certificates/${cert}${action}`;

describe("issueCertificateForDevice (what enrollment calls)", () => {
  it.each(["ECDSA-P256", "ECDSA-P384", "Ed25519", "RSA-2048"] as const)("issues a client certificate for a %s CSR that chains to the default CA", async (keyType) => {
    const { certificatePem, caChainPems, record } = await enrollCertificate(h, acme.org.id, deviceId, { keyType });
    const cert = new x509.X509Certificate(certificatePem);
    const caCert = new x509.X509Certificate(ca.certificate);
    // The CSR asked for another name, a SAN and the CA flag: all ignored.
    expect(cert.subject).toBe(`CN=${deviceId}`);
    expect(cert.issuer).toBe("CN=Acme Fleet CA");
    expect(cert.getExtension(x509.BasicConstraintsExtension)?.ca).toBe(false);
    expect(cert.getExtension(x509.SubjectAlternativeNameExtension)).toBeNull();
    expect(cert.getExtension(x509.ExtendedKeyUsageExtension)?.usages).toEqual([x509.ExtendedKeyUsage.clientAuth]);
    expect((cert.getExtension(x509.KeyUsagesExtension)!.usages & x509.KeyUsageFlags.digitalSignature) !== 0).toBe(true);
    expect(await cert.verify({ publicKey: caCert.publicKey, signatureOnly: true })).toBe(true);
    const chain = await new x509.X509ChainBuilder({ certificates: [caCert] }).build(cert);
    expect(chain.map((c) => c.subject)).toEqual([`CN=${deviceId}`, "CN=Acme Fleet CA"]);
    expect(caChainPems).toEqual([ca.certificate]);
    // Validity: 365 days by default; serial random; fingerprint is the SHA-256 of the DER.
    expect(Math.round((cert.notAfter.getTime() - Date.now()) / DAY)).toBe(365);
    expect(record).toMatchObject({ deviceId, caId: ca.id, revoked: false, subject: `CN=${deviceId}`, issuer: "CN=Acme Fleet CA" });
    expect(record.fingerprint).toBe(sha256OfPem(certificatePem));
    expect(record.serialNumber).toBe(cert.serialNumber.toLowerCase());
  });

  it("refuses when the organization has no default CA (409), a bad CSR (400) and an unknown device (404)", async () => {
    const t = await h.createTenant();
    const device = await createDevice(h, t.org.id);
    const { csrPem } = await makeCsr("ECDSA-P256");
    await expect(issueCertificateForDevice(h.services.prisma, h.services.secrets, { organizationId: t.org.id, deviceId: device, csrPem }))
      .rejects.toMatchObject({ code: "CONFLICT", message: expect.stringMatching(/has no default CA certificate/) });

    const tampered = csrPem.replace(/(\n[A-Za-z0-9+/]{10})[A-Za-z0-9+/]/, (_m, p) => p + (p.endsWith("A") ? "B" : "A"));
    await expect(issueCertificateForDevice(h.services.prisma, h.services.secrets, { organizationId: acme.org.id, deviceId, csrPem: tampered }))
      .rejects.toMatchObject({ code: "BAD_REQUEST" });
    const weak = await makeCsr("RSA-1024");
    await expect(issueCertificateForDevice(h.services.prisma, h.services.secrets, { organizationId: acme.org.id, deviceId, csrPem: weak.csrPem }))
      .rejects.toMatchObject({ code: "BAD_REQUEST", message: expect.stringContaining("RSA 1024 is not accepted") });
    await expect(issueCertificateForDevice(h.services.prisma, h.services.secrets, { organizationId: acme.org.id, deviceId: crypto.randomUUID(), csrPem }))
      .rejects.toMatchObject({ code: "NOT_FOUND" });
    // A device of another organization is unknown too.
    await expect(issueCertificateForDevice(h.services.prisma, h.services.secrets, { organizationId: globex.org.id, deviceId, csrPem }))
      .rejects.toMatchObject({ code: "NOT_FOUND" });
  });
});

describe("get (spec op 16) and list", () => {
  let issued: Awaited<ReturnType<typeof enrollCertificate>>;
  beforeAll(async () => {
    issued = await enrollCertificate(h, acme.org.id, deviceId);
  });

  it("answers the device certificate with every spec field", async () => {
    const res = await h.api("GET", certPath(deviceId, issued.record.id), { key: acme.key });
    expect(res.status).toBe(200);
    for (const field of SPEC_FIELDS) expect(res.body, field).toHaveProperty(field);
    const cert = new x509.X509Certificate(issued.certificatePem);
    expect(res.body).toMatchObject({
      id: issued.record.id,
      deviceId,
      fingerprint: sha256OfPem(issued.certificatePem),
      subject: `CN=${deviceId}`,
      issuer: "CN=Acme Fleet CA",
      notBefore: cert.notBefore.toISOString(),
      notAfter: cert.notAfter.toISOString(),
      revoked: false,
      status: "valid",
      caId: ca.id,
      serialNumber: cert.serialNumber.toLowerCase(),
      certificate: issued.certificatePem,
    });
    expect(res.body).not.toHaveProperty("revokedAt");
    expect(res.body).not.toHaveProperty("revokeReason");
    expect(new Date(res.body.createdAt).toISOString()).toBe(res.body.createdAt);
  });

  it("answers 404 for an unknown device, an unknown certificate, and a certificate of another device", async () => {
    const unknownDevice = await h.api("GET", certPath(crypto.randomUUID(), issued.record.id), { key: acme.key });
    expect(unknownDevice.status).toBe(404);
    expect(unknownDevice.body.message).toBe("Device not found");
    const unknownCert = await h.api("GET", certPath(deviceId, crypto.randomUUID()), { key: acme.key });
    expect(unknownCert.status).toBe(404);
    expect(unknownCert.body.message).toBe("Certificate not found");
    const otherDevice = await h.api("GET", certPath(otherDeviceId, issued.record.id), { key: acme.key });
    expect(otherDevice.status).toBe(404);
    expect(otherDevice.body.message).toBe("Certificate not found");
    expect((await h.api("GET", certPath(deviceId, issued.record.id), { key: globex.key })).status).toBe(404);
    expect((await h.api("GET", certPath(deviceId, "nope"), { key: acme.key })).status).toBe(400);
  });

  it("lists the device's certificates newest first, with paging and a status filter", async () => {
    const res = await h.api("GET", `/api/v1/devices/${deviceId}/certificates`, { key: acme.key });
    expect(res.status).toBe(200);
    const count = await h.services.prisma.deviceCertificate.count({ where: { deviceId } });
    expect(res.body.total).toBe(count);
    expect(res.body.items[0].id).toBe(issued.record.id);
    expect(res.body.items.every((c: { deviceId: string }) => c.deviceId === deviceId)).toBe(true);
    const page = await h.api("GET", `/api/v1/devices/${deviceId}/certificates?limit=2&offset=1`, { key: acme.key });
    expect(page.body.items.map((c: { id: string }) => c.id)).toEqual(res.body.items.slice(1, 3).map((c: { id: string }) => c.id));
    expect(page.body.hasMore).toBe(count > 3);
    const revoked = await h.api("GET", `/api/v1/devices/${deviceId}/certificates?status=revoked`, { key: acme.key });
    expect(revoked.body.items.every((c: { status: string }) => c.status === "revoked")).toBe(true);
    expect((await h.api("GET", `/api/v1/devices/${otherDeviceId}/certificates`, { key: acme.key })).body).toEqual({ items: [], total: 0, hasMore: false });
    expect((await h.api("GET", `/api/v1/devices/${crypto.randomUUID()}/certificates`, { key: acme.key })).status).toBe(404);
    expect((await h.api("GET", `/api/v1/devices/${deviceId}/certificates`, { key: globex.key })).status).toBe(404);
  });
});

describe("revoke", () => {
  it.each(REVOCATION_REASONS)("revokes with reason %s; a second revoke is 409", async (reason) => {
    const { record } = await enrollCertificate(h, acme.org.id, deviceId);
    const res = await h.api("POST", certPath(deviceId, record.id, "/revoke"), { key: acme.key, body: { reason } });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ id: record.id, revoked: true, revokeReason: reason, status: "revoked" });
    expect(Date.now() - Date.parse(res.body.revokedAt)).toBeLessThan(60_000);
    const again = await h.api("POST", certPath(deviceId, record.id, "/revoke"), { key: acme.key, body: { reason: "Other" } });
    expect(again.status).toBe(409);
    expect(again.body.message).toContain(`already revoked on ${res.body.revokedAt} (${reason})`);
    const stored = await h.services.prisma.deviceCertificate.findUniqueOrThrow({ where: { id: record.id } });
    expect(stored.revokeReason).toBe(reason);
    expect(await findValidCertificateByFingerprint(h.services.prisma, record.fingerprint)).toBeNull();
  });

  it("refuses an unknown reason (400), and 404s like op 16", async () => {
    const { record } = await enrollCertificate(h, acme.org.id, deviceId);
    const bad = await h.api("POST", certPath(deviceId, record.id, "/revoke"), { key: acme.key, body: { reason: "Bored" } });
    expect(bad.status).toBe(400);
    expect(bad.body.issues[0].path).toEqual(["reason"]);
    expect((await h.api("POST", certPath(deviceId, record.id, "/revoke"), { key: acme.key, body: {} })).status).toBe(400);
    expect((await h.api("POST", certPath(otherDeviceId, record.id, "/revoke"), { key: acme.key, body: { reason: "Other" } })).status).toBe(404);
    expect((await h.api("POST", certPath(crypto.randomUUID(), record.id, "/revoke"), { key: acme.key, body: { reason: "Other" } })).status).toBe(404);
    expect((await h.api("GET", certPath(deviceId, record.id), { key: acme.key })).body.revoked).toBe(false);
    // The audit entry names the certificate.
    await h.api("POST", certPath(deviceId, record.id, "/revoke"), { key: acme.key, body: { reason: "Other" } });
    const entry = await h.services.prisma.auditEntry.findFirstOrThrow({ where: { entityId: record.id, action: "deviceCertificates.revoke" } });
    expect(entry).toMatchObject({ entityType: "device_certificate", outcome: "success", organizationId: acme.org.id });
  });

  it("revokeAllCertificatesOfDevice revokes every certificate of one device", async () => {
    const device = await createDevice(h, acme.org.id, "to-decommission");
    const a = await enrollCertificate(h, acme.org.id, device);
    const b = await enrollCertificate(h, acme.org.id, device);
    const keep = await enrollCertificate(h, acme.org.id, otherDeviceId);
    expect(await revokeAllCertificatesOfDevice(h.services.prisma, acme.org.id, device, "Cessation of operation")).toBe(2);
    expect(await revokeAllCertificatesOfDevice(h.services.prisma, acme.org.id, device, "Cessation of operation")).toBe(0);
    // Another organization cannot touch them.
    expect(await revokeAllCertificatesOfDevice(h.services.prisma, globex.org.id, otherDeviceId, "Other")).toBe(0);
    const rows = await h.services.prisma.deviceCertificate.findMany({ where: { id: { in: [a.record.id, b.record.id, keep.record.id] } } });
    expect(Object.fromEntries(rows.map((r) => [r.id, r.revokeReason]))).toEqual({
      [a.record.id]: "Cessation of operation",
      [b.record.id]: "Cessation of operation",
      [keep.record.id]: null,
    });
  });
});

describe("renew", () => {
  it("issues a new certificate from a new CSR and keeps the old one valid", async () => {
    const old = await enrollCertificate(h, acme.org.id, deviceId);
    const { csrPem, keys } = await makeCsr("ECDSA-P256");
    const res = await h.api("POST", certPath(deviceId, old.record.id, "/renew"), { key: acme.key, body: { csrPem } });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({ deviceId, revoked: false, status: "valid", renewedFromId: old.record.id, caId: ca.id });
    expect(res.body.id).not.toBe(old.record.id);
    const cert = new x509.X509Certificate(res.body.certificate);
    const newKey = Buffer.from(await crypto.subtle.exportKey("spki", keys.publicKey)).toString("hex");
    expect(Buffer.from(cert.publicKey.rawData).toString("hex")).toBe(newKey);
    expect(res.body.fingerprint).toBe(sha256OfPem(res.body.certificate));
    expect((await h.api("GET", certPath(deviceId, old.record.id), { key: acme.key })).body.revoked).toBe(false);
  });

  it("certifies the same public key when no CSR is given, and supersedes the old one when asked", async () => {
    const old = await enrollCertificate(h, acme.org.id, deviceId);
    const res = await h.api("POST", certPath(deviceId, old.record.id, "/renew"), { key: acme.key, body: { supersede: true } });
    expect(res.status, res.text).toBe(201);
    const oldCert = new x509.X509Certificate(old.certificatePem);
    const newCert = new x509.X509Certificate(res.body.certificate);
    expect(Buffer.from(newCert.publicKey.rawData)).toEqual(Buffer.from(oldCert.publicKey.rawData));
    expect(newCert.serialNumber).not.toBe(oldCert.serialNumber);
    const before = await h.api("GET", certPath(deviceId, old.record.id), { key: acme.key });
    expect(before.body).toMatchObject({ revoked: true, revokeReason: "Superseded" });
    // A revoked certificate is not renewed.
    const again = await h.api("POST", certPath(deviceId, old.record.id, "/renew"), { key: acme.key, body: {} });
    expect(again.status).toBe(409);
    // "supersede": "false" as a string is refused rather than read as true.
    expect((await h.api("POST", certPath(deviceId, res.body.id, "/renew"), { key: acme.key, body: { supersede: "false" } })).status).toBe(400);
  });

  it("refuses a bad CSR (400), unknown ids (404), and an organization without a usable default CA (409)", async () => {
    const old = await enrollCertificate(h, acme.org.id, deviceId);
    const bad = await h.api("POST", certPath(deviceId, old.record.id, "/renew"), { key: acme.key, body: { csrPem: "not a csr" } });
    expect(bad.status).toBe(400);
    expect(bad.body.message).toContain("not a PEM certificate request");
    expect((await h.api("POST", certPath(otherDeviceId, old.record.id, "/renew"), { key: acme.key, body: {} })).status).toBe(404);

    const t = await h.createTenant();
    const caRes = await h.api("POST", "/api/v1/ca-certificates/generate", { key: t.key, body: { name: "Only", commonName: "Only CA" } });
    const device = await createDevice(h, t.org.id);
    const issued = await enrollCertificate(h, t.org.id, device);
    await h.api("POST", `/api/v1/ca-certificates/${caRes.body.id}/retire`, { key: t.key });
    const noCa = await h.api("POST", certPath(device, issued.record.id, "/renew"), { key: t.key, body: {} });
    expect(noCa.status).toBe(409);
    expect(noCa.body.message).toContain("no default CA");
    expect(await h.services.prisma.deviceCertificate.count({ where: { deviceId: device } })).toBe(1);
  });
});

describe("findValidCertificateByFingerprint (what device authentication calls)", () => {
  it("finds a valid certificate by hex (any case, colons allowed) or base64url fingerprint; null when expired or unknown", async () => {
    const { record, certificatePem } = await enrollCertificate(h, acme.org.id, otherDeviceId);
    const hex = sha256OfPem(certificatePem);
    expect((await findValidCertificateByFingerprint(h.services.prisma, hex))?.id).toBe(record.id);
    expect((await findValidCertificateByFingerprint(h.services.prisma, hex.toUpperCase().match(/../g)!.join(":")))?.id).toBe(record.id);
    const x5t = Buffer.from(hex, "hex").toString("base64url");
    expect((await findValidCertificateByFingerprint(h.services.prisma, x5t))?.id).toBe(record.id);
    expect(await findValidCertificateByFingerprint(h.services.prisma, "0".repeat(64))).toBeNull();
    expect(await findValidCertificateByFingerprint(h.services.prisma, "garbage")).toBeNull();
    await h.services.prisma.deviceCertificate.update({ where: { id: record.id }, data: { notAfter: new Date(Date.now() - 1000) } });
    expect(await findValidCertificateByFingerprint(h.services.prisma, hex)).toBeNull();
  });
});

describe("security on every device certificate operation", () => {
  it("401 without or with bad credentials, 403 without the permission, 404 for another tenant", async () => {
    const { record } = await enrollCertificate(h, acme.org.id, deviceId);
    const spare = await enrollCertificate(h, acme.org.id, deviceId);
    const cases = [
      { method: "GET", path: `/api/v1/devices/${deviceId}/certificates`, permission: "certificates:read", foreignPath: `/api/v1/devices/${deviceId}/certificates` },
      { method: "GET", path: certPath(deviceId, record.id), permission: "certificates:read", foreignPath: certPath(deviceId, record.id) },
      { method: "POST", path: certPath(deviceId, record.id, "/revoke"), body: { reason: "Key compromise" }, permission: "certificates:write", foreignPath: certPath(deviceId, record.id, "/revoke") },
      { method: "POST", path: certPath(deviceId, spare.record.id, "/renew"), body: {}, permission: "certificates:write", foreignPath: certPath(deviceId, spare.record.id, "/renew") },
    ];
    for (const c of cases) await expectSecured(h, acme, globex, c);
    const after = await h.services.prisma.deviceCertificate.findMany({ where: { id: { in: [record.id, spare.record.id] } }, select: { revoked: true } });
    expect(after.every((c) => !c.revoked)).toBe(true);
    expect(await h.services.prisma.deviceCertificate.count({ where: { renewedFromId: spare.record.id } })).toBe(0);
  });

  it("works through the typed tRPC client too", async () => {
    const client = createTRPCClient<AppRouter>({ links: [httpBatchLink({ url: `${h.url}/trpc`, headers: { "x-api-key": acme.key } })] });
    const { record } = await enrollCertificate(h, acme.org.id, deviceId);
    const got = await client.deviceCertificates.get.query({ deviceId, certificateId: record.id });
    expect(got.fingerprint).toBe(record.fingerprint);
    const revoked = await client.deviceCertificates.revoke.mutate({ deviceId, certificateId: record.id, reason: "Key compromise" });
    expect(revoked.revokeReason).toBe("Key compromise");
    const cas = await client.caCertificates.list.query({});
    expect(cas.items.map((c) => c.id)).toContain(ca.id);
    const stats = await client.certificates.stats.query({});
    expect(stats.revoked).toBeGreaterThan(0);
  });
});

it("never lets a private key out: not in responses, logs or the audit trail", async () => {
  await expectNoPrivateKeyLeaked(h, responses, await storedCaKeys(h));
});
