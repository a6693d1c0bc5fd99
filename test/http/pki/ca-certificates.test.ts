// CA certificates through REST: generate, upload (and every refusal), get, list, download,
// renew, retire, set default (spec op 19), delete, and the security suite on each operation.
import { createPrivateKey, createPublicKey, X509Certificate } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { expectSecured } from "../../support/security.js";
import {
  createDevice,
  DAY,
  enrollCertificate,
  expectNoPrivateKeyLeaked,
  makeCa,
  recordResponses,
  sha256OfPem,
  storedCaKeys,
  x509,
  type TestCa,
} from "./support.js";

let h: Harness;
let acme: Tenant;
let globex: Tenant;
let responses: string[];
const uploadedKeys: string[] = [];

beforeAll(async () => {
  h = await createHarness();
  responses = recordResponses(h);
  acme = await h.createTenant("Acme PKI");
  globex = await h.createTenant("Globex PKI");
});
afterAll(() => h?.close());

const generate = (t: Tenant, body: Record<string, unknown>) => h.api("POST", "/api/v1/ca-certificates/generate", { key: t.key, body });
const upload = (t: Tenant, body: Record<string, unknown>) => h.api("POST", "/api/v1/ca-certificates", { key: t.key, body });
const spkiOf = (pem: string) => new X509Certificate(pem).publicKey.export({ type: "spki", format: "der" }).toString("hex");

const SPEC_FIELDS = [
  "id", "name", "fingerprint", "isRoot", "isDefault", "notBefore", "notAfter", "retiredAt", "createdAt",
  "subject", "issuer", "serialNumber", "keyAlgorithm", "signatureAlgorithm", "subjectAltNames", "certificate",
];

describe("generate a self-signed CA", () => {
  it.each([
    [undefined, "ECDSA P-256", "ecdsa-with-SHA256"],
    ["ECDSA-P256", "ECDSA P-256", "ecdsa-with-SHA256"],
    ["RSA-2048", "RSA 2048", "sha256WithRSAEncryption"],
    ["RSA-4096", "RSA 4096", "sha256WithRSAEncryption"],
  ])("generates with keyAlgorithm %s (%s)", async (keyAlgorithm, keyLabel, signatureAlgorithm) => {
    const t = await h.createTenant();
    const name = `Root ${keyAlgorithm ?? "default"}`;
    const res = await generate(t, { name, commonName: "Fleet Root CA", validityDays: 730, ...(keyAlgorithm ? { keyAlgorithm } : {}) });
    expect(res.status, res.text).toBe(201);
    const ca = res.body;
    for (const field of SPEC_FIELDS) expect(ca, field).toHaveProperty(field);
    const cert = new x509.X509Certificate(ca.certificate);
    expect(ca).toMatchObject({
      name,
      subject: "CN=Fleet Root CA",
      issuer: "CN=Fleet Root CA",
      isRoot: true,
      isDefault: true, // the first CA of the organization
      retiredAt: null,
      keyAlgorithm: keyLabel,
      signatureAlgorithm,
      subjectAltNames: [],
      hasPrivateKey: true,
      origin: "generated",
      renewedFromId: null,
    });
    expect(ca.serialNumber).toMatch(/^[0-9a-f]+$/);
    expect(ca.serialNumber).toBe(cert.serialNumber.toLowerCase());
    expect(ca.fingerprint).toBe(sha256OfPem(ca.certificate));
    expect(ca.notBefore).toBe(cert.notBefore.toISOString());
    expect(ca.notAfter).toBe(cert.notAfter.toISOString());
    const lifetime = (Date.parse(ca.notAfter) - Date.now()) / DAY;
    expect(lifetime).toBeGreaterThan(729.9);
    expect(lifetime).toBeLessThan(730.1);
    expect(cert.getExtension(x509.BasicConstraintsExtension)?.ca).toBe(true);
    expect(await cert.verify({ signatureOnly: true })).toBe(true);

    // The key is stored sealed, and it is the certificate's key.
    const row = await h.services.prisma.caCertificate.findUniqueOrThrow({ where: { id: ca.id } });
    expect(row.privateKeyEncrypted).toMatch(/^v1:/);
    expect(row.privateKeyEncrypted).not.toContain("PRIVATE KEY");
    const key = createPrivateKey(h.services.secrets.decrypt(row.privateKeyEncrypted!));
    expect(spkiOf(ca.certificate)).toBe(createPublicKey(key).export({ type: "spki", format: "der" }).toString("hex"));
  });

  it("defaults to ten years, and makes only the first CA the default", async () => {
    const t = await h.createTenant();
    const first = await generate(t, { name: "First", commonName: "First CA" });
    const second = await generate(t, { name: "Second", commonName: "Second CA" });
    expect(first.body.isDefault).toBe(true);
    expect(second.body.isDefault).toBe(false);
    expect((Date.parse(first.body.notAfter) - Date.now()) / DAY).toBeGreaterThan(3649);
    expect(await h.services.prisma.caCertificate.count({ where: { organizationId: t.org.id, isDefault: true } })).toBe(1);
  });

  it.each([
    [{ commonName: "x" }, "name"],
    [{ name: "n" }, "commonName"],
    [{ name: "n", commonName: "x".repeat(65) }, "commonName"],
    [{ name: "n", commonName: "x", keyAlgorithm: "DSA-1024" }, "keyAlgorithm"],
    [{ name: "n", commonName: "x", validityDays: 0 }, "validityDays"],
    [{ name: "n", commonName: "x", validityDays: 36_501 }, "validityDays"],
  ])("refuses %j with a 400 naming %s", async (body, field) => {
    const res = await generate(acme, body);
    expect(res.status).toBe(400);
    expect(res.body.issues.map((i: { path: string[] }) => i.path.join("."))).toContain(field);
  });

  it("refuses a duplicate name with 409", async () => {
    expect((await generate(acme, { name: "Acme Root", commonName: "Acme Root CA" })).status).toBe(201);
    const again = await generate(acme, { name: "Acme Root", commonName: "Another" });
    expect(again.status).toBe(409);
    expect(again.body.message).toContain("Acme Root");
  });
});

describe("upload a CA", () => {
  it("accepts a certificate with its key, stores the key sealed, and reads back every field", async () => {
    const t = await h.createTenant();
    const ca = await makeCa({ subject: "CN=Customer Root, O=Customer" });
    uploadedKeys.push(ca.privateKeyPem);
    const res = await upload(t, { name: "Customer root", certificatePem: ca.certificatePem, privateKeyPem: ca.privateKeyPem });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({
      name: "Customer root",
      subject: "CN=Customer Root, O=Customer",
      issuer: "CN=Customer Root, O=Customer",
      isRoot: true,
      isDefault: true,
      hasPrivateKey: true,
      origin: "uploaded",
      keyAlgorithm: "ECDSA P-256",
      fingerprint: sha256OfPem(ca.certificatePem),
      serialNumber: ca.cert.serialNumber.toLowerCase(),
    });
    const row = await h.services.prisma.caCertificate.findUniqueOrThrow({ where: { id: res.body.id } });
    expect(h.services.secrets.decrypt(row.privateKeyEncrypted!)).toContain("BEGIN PRIVATE KEY");
    // The audit entry exists, with the key masked.
    const entry = await h.services.prisma.auditEntry.findFirstOrThrow({ where: { entityId: res.body.id, action: "caCertificates.upload" } });
    expect(entry.entityType).toBe("ca_certificate");
    expect((entry.changes as Record<string, unknown>).privateKeyPem).toBe("[redacted]");
  });

  it("accepts an intermediate followed by its root (a chain), and downloads both", async () => {
    const t = await h.createTenant();
    const root = await makeCa({ subject: "CN=Customer Root" });
    const intermediate = await makeCa({ subject: "CN=Customer Intermediate", issuer: root });
    uploadedKeys.push(intermediate.privateKeyPem);
    const res = await upload(t, {
      name: "Intermediate",
      certificatePem: intermediate.certificatePem + root.certificatePem,
      privateKeyPem: intermediate.privateKeyPem,
    });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({ isRoot: false, subject: "CN=Customer Intermediate", issuer: "CN=Customer Root", isDefault: true });
    expect(res.body.certificate.match(/BEGIN CERTIFICATE/g)).toHaveLength(1);
    const file = await h.api("GET", `/api/v1/ca-certificates/${res.body.id}/download`, { key: t.key });
    expect(file.text.match(/BEGIN CERTIFICATE/g)).toHaveLength(2);
    expect(sha256OfPem(file.text)).toBe(res.body.fingerprint);
    // Device certificates it signs come with the whole chain.
    const deviceId = await createDevice(h, t.org.id);
    const issued = await enrollCertificate(h, t.org.id, deviceId);
    expect(issued.caChainPems.map(sha256OfPem)).toEqual([sha256OfPem(intermediate.certificatePem), sha256OfPem(root.certificatePem)]);
  });

  it("accepts a certificate without its key: trusted, but never the default", async () => {
    const t = await h.createTenant();
    const ca = await makeCa();
    const res = await upload(t, { name: "Trust only", certificatePem: ca.certificatePem });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({ hasPrivateKey: false, isDefault: false });
    const setDefault = await h.api("PATCH", `/api/v1/ca-certificates/${res.body.id}/default`, { key: t.key });
    expect(setDefault.status).toBe(400);
    expect(setDefault.body.message).toContain("without its private key");
    const renew = await h.api("POST", `/api/v1/ca-certificates/${res.body.id}/renew`, { key: t.key, body: {} });
    expect(renew.status).toBe(409);
    const crl = await h.api("GET", `/api/v1/ca-certificates/${res.body.id}/crl`, { key: t.key });
    expect(crl.status).toBe(409);
    expect(crl.body.message).toContain("without its private key");
  });

  describe("refuses bad input with a 400 that says why", () => {
    let good: TestCa;
    let other: TestCa;
    beforeAll(async () => {
      good = await makeCa();
      other = await makeCa();
    });

    const cases: [string, () => Promise<Record<string, unknown>>, RegExp][] = [
      ["no PEM at all", async () => ({ certificatePem: "hello, I am a certificate" }), /not a PEM certificate/],
      ["a private key pasted as the certificate", async () => ({ certificatePem: good.privateKeyPem }), /must be a PEM CERTIFICATE, found a PEM PRIVATE KEY block/],
      ["a truncated PEM block", async () => ({ certificatePem: good.certificatePem.slice(0, 200) }), /truncated or malformed PEM block/],
      ["invalid base64", async () => ({ certificatePem: "-----BEGIN CERTIFICATE-----\n!!!!\n-----END CERTIFICATE-----\n" }), /invalid base64/],
      ["DER garbage inside a PEM block", async () => ({ certificatePem: "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n" }), /could not be parsed as an X.509 certificate/],
      ["a certificate that is not a CA", async () => ({ certificatePem: (await makeCa({ isCa: false })).certificatePem }), /is not a CA \(basicConstraints cA is false\)/],
      ["a certificate without basicConstraints", async () => ({ certificatePem: (await makeCa({ isCa: null })).certificatePem }), /is not a CA \(it has no basicConstraints extension\)/],
      ["a CA that may not sign certificates", async () => ({ certificatePem: (await makeCa({ keyUsage: x509.KeyUsageFlags.cRLSign })).certificatePem }), /keyUsage lacks keyCertSign/],
      ["an expired CA", async () => ({ certificatePem: (await makeCa({ notBefore: new Date(Date.now() - 30 * DAY), notAfter: new Date(Date.now() - DAY) })).certificatePem }), /has expired/],
      ["a CA that is not valid yet", async () => ({ certificatePem: (await makeCa({ notBefore: new Date(Date.now() + DAY), notAfter: new Date(Date.now() + 30 * DAY) })).certificatePem }), /is not yet valid/],
      ["a key that belongs to another certificate", async () => ({ certificatePem: good.certificatePem, privateKeyPem: other.privateKeyPem }), /private key does not match the certificate/],
      ["a chain whose next certificate is not the issuer", async () => ({ certificatePem: good.certificatePem + other.certificatePem }), /certificate chain is broken/],
      ["a certificate where the key belongs", async () => ({ certificatePem: good.certificatePem, privateKeyPem: other.certificatePem }), /must be a PEM "PRIVATE KEY", "EC PRIVATE KEY" or "RSA PRIVATE KEY"/],
      [
        "an encrypted private key",
        async () => ({
          certificatePem: good.certificatePem,
          privateKeyPem: createPrivateKey(good.privateKeyPem).export({ type: "pkcs8", format: "pem", cipher: "aes-256-cbc", passphrase: "secret" }),
        }),
        /is encrypted; provide it without a passphrase/,
      ],
    ];

    it.each(cases)("%s", async (_what, makeBody, message) => {
      const body = { name: `Bad ${Math.random()}`, ...(await makeBody()) };
      const res = await upload(acme, body);
      expect(res.status, res.text).toBe(400);
      expect(res.body.code).toBe("BAD_REQUEST");
      expect(res.body.message).toMatch(message);
      expect(await h.services.prisma.caCertificate.count({ where: { name: body.name } })).toBe(0);
    });

    it("a missing certificate, naming the field", async () => {
      const res = await upload(acme, { name: "No cert" });
      expect(res.status).toBe(400);
      expect(res.body.issues[0].path).toEqual(["certificatePem"]);
    });

    it("the same certificate twice (409) and a name taken (409)", async () => {
      const t = await h.createTenant();
      expect((await upload(t, { name: "Once", certificatePem: good.certificatePem })).status).toBe(201);
      const twice = await upload(t, { name: "Twice", certificatePem: good.certificatePem });
      expect(twice.status).toBe(409);
      expect(twice.body.message).toContain('already in the organization as "Once"');
      const sameName = await upload(t, { name: "Once", certificatePem: other.certificatePem });
      expect(sameName.status).toBe(409);
      // Another organization may hold the same certificate.
      expect((await upload(globex, { name: "Shared", certificatePem: good.certificatePem })).status).toBe(201);
    });
  });
});

describe("get, list and download", () => {
  let caId: string;
  beforeAll(async () => {
    const res = await generate(acme, { name: "Listed", commonName: "Listed CA", keyAlgorithm: "ECDSA-P256" });
    caId = res.body.id;
  });

  it("gets every field of the spec's CA resource", async () => {
    const res = await h.api("GET", `/api/v1/ca-certificates/${caId}`, { key: acme.key });
    expect(res.status).toBe(200);
    for (const field of SPEC_FIELDS) expect(res.body, field).toHaveProperty(field);
    expect(res.body.id).toBe(caId);
    expect(res.body.fingerprint).toBe(sha256OfPem(res.body.certificate));
    expect(new Date(res.body.createdAt).toISOString()).toBe(res.body.createdAt);
  });

  it("answers 404 for an unknown id and 400 for a malformed one", async () => {
    const unknown = await h.api("GET", `/api/v1/ca-certificates/${crypto.randomUUID()}`, { key: acme.key });
    expect(unknown.status).toBe(404);
    expect(unknown.body.message).toBe("CA certificate not found");
    expect((await h.api("GET", "/api/v1/ca-certificates/not-a-uuid", { key: acme.key })).status).toBe(400);
  });

  it("lists the organization's CAs newest first, with paging", async () => {
    const all = await h.api("GET", "/api/v1/ca-certificates", { key: acme.key });
    expect(all.status).toBe(200);
    const count = await h.services.prisma.caCertificate.count({ where: { organizationId: acme.org.id } });
    expect(all.body.total).toBe(count);
    expect(all.body.items[0].id).toBe(caId);
    expect(all.body.items.every((c: { certificate: string }) => c.certificate.startsWith("-----BEGIN CERTIFICATE-----"))).toBe(true);
    const page = await h.api("GET", "/api/v1/ca-certificates?limit=1&offset=1", { key: acme.key });
    expect(page.body.items).toHaveLength(1);
    expect(page.body.items[0].id).toBe(all.body.items[1].id);
    expect(page.body.hasMore).toBe(count > 2);
    const other = await h.api("GET", "/api/v1/ca-certificates", { key: globex.key });
    expect(other.body.items.some((c: { id: string }) => c.id === caId)).toBe(false);
  });

  it("downloads the PEM with a Content-Disposition", async () => {
    const res = await h.api("GET", `/api/v1/ca-certificates/${caId}/download`, { key: acme.key });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("application/x-pem-file");
    expect(res.headers.get("content-disposition")).toBe('attachment; filename="Listed.pem"');
    const get = await h.api("GET", `/api/v1/ca-certificates/${caId}`, { key: acme.key });
    expect(res.text).toBe(get.body.certificate);
    expect((await h.api("GET", `/api/v1/ca-certificates/${crypto.randomUUID()}/download`, { key: acme.key })).status).toBe(404);
  });
});

describe("renew", () => {
  it("keeps subject and key, changes serial and validity, keeps the old CA, and moves the default", async () => {
    const t = await h.createTenant();
    const old = (await generate(t, { name: "Renewable", commonName: "Renewable CA", validityDays: 100 })).body;
    const deviceId = await createDevice(h, t.org.id);
    const before = await enrollCertificate(h, t.org.id, deviceId);

    const res = await h.api("POST", `/api/v1/ca-certificates/${old.id}/renew`, { key: t.key, body: { validityDays: 400 } });
    expect(res.status, res.text).toBe(201);
    const renewed = res.body;
    expect(renewed).toMatchObject({ subject: old.subject, issuer: old.issuer, origin: "renewed", renewedFromId: old.id, isDefault: true, isRoot: true });
    expect(renewed.name).toMatch(/^Renewable \(renewed \d{4}-\d{2}-\d{2}\)$/);
    expect(renewed.id).not.toBe(old.id);
    expect(renewed.serialNumber).not.toBe(old.serialNumber);
    expect(renewed.fingerprint).not.toBe(old.fingerprint);
    expect(spkiOf(renewed.certificate)).toBe(spkiOf(old.certificate));
    expect((Date.parse(renewed.notAfter) - Date.now()) / DAY).toBeGreaterThan(399.9);

    const oldNow = await h.api("GET", `/api/v1/ca-certificates/${old.id}`, { key: t.key });
    expect(oldNow.status).toBe(200);
    expect(oldNow.body).toMatchObject({ isDefault: false, retiredAt: null });
    expect(await h.services.prisma.caCertificate.count({ where: { organizationId: t.org.id, isDefault: true } })).toBe(1);

    // What the old CA issued verifies against the renewed one (same name, same key).
    const device = new x509.X509Certificate(before.certificatePem);
    expect(await device.verify({ publicKey: new x509.X509Certificate(renewed.certificate).publicKey, signatureOnly: true })).toBe(true);
    // New device certificates come from the renewed CA.
    const after = await enrollCertificate(h, t.org.id, deviceId);
    expect(after.record.caId).toBe(renewed.id);
  });

  it("defaults to the old lifetime and accepts a name; refuses a retired CA (409) and an intermediate (409)", async () => {
    const t = await h.createTenant();
    const old = (await generate(t, { name: "Yearly", commonName: "Yearly CA", validityDays: 365 })).body;
    const res = await h.api("POST", `/api/v1/ca-certificates/${old.id}/renew`, { key: t.key, body: { name: "Yearly 2" } });
    expect(res.status).toBe(201);
    expect(res.body.name).toBe("Yearly 2");
    expect(Math.round((Date.parse(res.body.notAfter) - Date.now()) / DAY)).toBe(365);

    await h.api("POST", `/api/v1/ca-certificates/${old.id}/retire`, { key: t.key });
    const retired = await h.api("POST", `/api/v1/ca-certificates/${old.id}/renew`, { key: t.key, body: {} });
    expect(retired.status).toBe(409);
    expect(retired.body.message).toContain("retired");

    const root = await makeCa();
    const intermediate = await makeCa({ issuer: root });
    const up = await upload(t, { name: "Inter", certificatePem: intermediate.certificatePem, privateKeyPem: intermediate.privateKeyPem });
    const inter = await h.api("POST", `/api/v1/ca-certificates/${up.body.id}/renew`, { key: t.key, body: {} });
    expect(inter.status).toBe(409);
    expect(inter.body.message).toContain("only self-signed CAs can be renewed");

    expect((await h.api("POST", `/api/v1/ca-certificates/${crypto.randomUUID()}/renew`, { key: t.key, body: {} })).status).toBe(404);
    const bad = await h.api("POST", `/api/v1/ca-certificates/${res.body.id}/renew`, { key: t.key, body: { validityDays: -1 } });
    expect(bad.status).toBe(400);
  });
});

describe("retire and set default (spec op 19)", () => {
  let t: Tenant;
  let first: any;
  let second: any;
  beforeAll(async () => {
    t = await h.createTenant();
    first = (await generate(t, { name: "One", commonName: "One CA" })).body;
    second = (await generate(t, { name: "Two", commonName: "Two CA" })).body;
  });

  const defaults = () => h.services.prisma.caCertificate.findMany({ where: { organizationId: t.org.id, isDefault: true }, select: { id: true } });

  it("switches the default in one step and answers the CA object", async () => {
    expect(await defaults()).toEqual([{ id: first.id }]);
    const res = await h.api("PATCH", `/api/v1/ca-certificates/${second.id}/default`, { key: t.key });
    expect(res.status).toBe(200);
    for (const field of SPEC_FIELDS) expect(res.body, field).toHaveProperty(field);
    expect(res.body).toMatchObject({ id: second.id, isDefault: true });
    expect(await defaults()).toEqual([{ id: second.id }]);
    // Setting it again changes nothing.
    expect((await h.api("PATCH", `/api/v1/ca-certificates/${second.id}/default`, { key: t.key })).body.isDefault).toBe(true);
    expect(await defaults()).toEqual([{ id: second.id }]);
    // Concurrent switches still leave exactly one default.
    await Promise.all([first.id, second.id, first.id].map((id) => h.api("PATCH", `/api/v1/ca-certificates/${id}/default`, { key: t.key })));
    expect(await defaults()).toHaveLength(1);
  });

  it("needs no request body at all (the spec's request is none)", async () => {
    const bare = (method: string, path: string) => fetch(`${h.url}${path}`, { method, headers: { "x-api-key": t.key } });
    const res = await bare("PATCH", `/api/v1/ca-certificates/${second.id}/default`);
    expect(res.status).toBe(200);
    expect(((await res.json()) as { isDefault: boolean }).isDefault).toBe(true);
    const spare = (await generate(t, { name: "Bare", commonName: "Bare CA" })).body;
    expect((await bare("POST", `/api/v1/ca-certificates/${spare.id}/renew`)).status).toBe(201);
    expect((await bare("POST", `/api/v1/ca-certificates/${spare.id}/retire`)).status).toBe(200);
    // A body in another format is still refused.
    const text = await fetch(`${h.url}/api/v1/ca-certificates/${second.id}/default`, { method: "PATCH", headers: { "x-api-key": t.key, "content-type": "text/plain" }, body: "x" });
    expect(text.status).toBe(415);
  });

  it("answers 404 for an unknown CA and 403 without certificates:admin", async () => {
    expect((await h.api("PATCH", `/api/v1/ca-certificates/${crypto.randomUUID()}/default`, { key: t.key })).status).toBe(404);
    const operator = await h.createKey(t.org.id, ["certificates:read", "certificates:write"], { role: "operator" });
    const denied = await h.api("PATCH", `/api/v1/ca-certificates/${first.id}/default`, { key: operator });
    expect(denied.status).toBe(403);
    expect(denied.body.message).toContain("certificates:admin");
    const admin = await h.createKey(t.org.id, ["certificates:admin"], { role: "admin" });
    expect((await h.api("PATCH", `/api/v1/ca-certificates/${first.id}/default`, { key: admin })).status).toBe(200);
  });

  it("retires a CA: no longer the default, no longer signing; a second retire is 409; a retired CA cannot be the default (400)", async () => {
    await h.api("PATCH", `/api/v1/ca-certificates/${first.id}/default`, { key: t.key });
    const res = await h.api("POST", `/api/v1/ca-certificates/${first.id}/retire`, { key: t.key });
    expect(res.status).toBe(200);
    expect(res.body.isDefault).toBe(false);
    expect(Date.parse(res.body.retiredAt)).toBeGreaterThan(Date.now() - 60_000);
    expect(await defaults()).toEqual([]);

    // Enrollment is refused while there is no usable default CA.
    const deviceId = await createDevice(h, t.org.id);
    await expect(enrollCertificate(h, t.org.id, deviceId)).rejects.toMatchObject({ code: "CONFLICT", message: expect.stringContaining("no default CA") });

    expect((await h.api("POST", `/api/v1/ca-certificates/${first.id}/retire`, { key: t.key })).status).toBe(409);
    const setRetired = await h.api("PATCH", `/api/v1/ca-certificates/${first.id}/default`, { key: t.key });
    expect(setRetired.status).toBe(400);
    expect(setRetired.body.code).toBe("BAD_REQUEST");
    expect(setRetired.body.message).toMatch(/^Bad request: .*retired/);
    expect(await defaults()).toEqual([]);

    // The other CA takes over.
    expect((await h.api("PATCH", `/api/v1/ca-certificates/${second.id}/default`, { key: t.key })).status).toBe(200);
    expect((await enrollCertificate(h, t.org.id, deviceId)).record.caId).toBe(second.id);
  });

  it("refuses an expired default CA at enrollment with 409", async () => {
    const t2 = await h.createTenant();
    const ca = (await generate(t2, { name: "Short", commonName: "Short CA" })).body;
    await h.services.prisma.caCertificate.update({ where: { id: ca.id }, data: { notAfter: new Date(Date.now() - 1000) } });
    const deviceId = await createDevice(h, t2.org.id);
    await expect(enrollCertificate(h, t2.org.id, deviceId)).rejects.toMatchObject({ code: "CONFLICT", message: expect.stringContaining("expired") });
  });
});

describe("delete", () => {
  it("is refused (409) for the default CA and while it has valid certificates; allowed once they are revoked", async () => {
    const t = await h.createTenant();
    const a = (await generate(t, { name: "A", commonName: "A CA" })).body;
    const b = (await generate(t, { name: "B", commonName: "B CA" })).body;
    const deviceId = await createDevice(h, t.org.id);
    const issued = await enrollCertificate(h, t.org.id, deviceId);
    expect(issued.record.caId).toBe(a.id);

    const isDefault = await h.api("DELETE", `/api/v1/ca-certificates/${a.id}`, { key: t.key });
    expect(isDefault.status).toBe(409);
    expect(isDefault.body.message).toContain("default");

    await h.api("PATCH", `/api/v1/ca-certificates/${b.id}/default`, { key: t.key });
    const stillValid = await h.api("DELETE", `/api/v1/ca-certificates/${a.id}`, { key: t.key });
    expect(stillValid.status).toBe(409);
    expect(stillValid.body.message).toContain("has issued 1 device certificate that is still valid;");

    const revoke = await h.api("POST", `/api/v1/devices/${deviceId}/certificates/${issued.record.id}/revoke`, { key: t.key, body: { reason: "Cessation of operation" } });
    expect(revoke.status).toBe(200);
    const res = await h.api("DELETE", `/api/v1/ca-certificates/${a.id}`, { key: t.key });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ id: a.id, deleted: true });
    expect((await h.api("GET", `/api/v1/ca-certificates/${a.id}`, { key: t.key })).status).toBe(404);
    // The certificate record stays, without its CA.
    const cert = await h.api("GET", `/api/v1/devices/${deviceId}/certificates/${issued.record.id}`, { key: t.key });
    expect(cert.body).toMatchObject({ caId: null, revoked: true });
    expect((await h.api("DELETE", `/api/v1/ca-certificates/${a.id}`, { key: t.key })).status).toBe(404);
  });

  it("is allowed when its certificates have all expired", async () => {
    const t = await h.createTenant();
    const a = (await generate(t, { name: "A", commonName: "A CA" })).body;
    const b = (await generate(t, { name: "B", commonName: "B CA" })).body;
    const deviceId = await createDevice(h, t.org.id);
    const issued = await enrollCertificate(h, t.org.id, deviceId);
    await h.services.prisma.deviceCertificate.update({ where: { id: issued.record.id }, data: { notAfter: new Date(Date.now() - 1000) } });
    await h.api("PATCH", `/api/v1/ca-certificates/${b.id}/default`, { key: t.key });
    expect((await h.api("DELETE", `/api/v1/ca-certificates/${a.id}`, { key: t.key })).status).toBe(200);
  });
});

describe("security on every CA operation", () => {
  let ca: any;
  let spare: any;
  beforeAll(async () => {
    ca = (await generate(acme, { name: "Secured", commonName: "Secured CA" })).body;
    spare = (await generate(acme, { name: "Spare", commonName: "Spare CA" })).body;
  });

  it("401 without or with bad credentials, 403 without the permission, 404 for another tenant", async () => {
    const pem = (await makeCa()).certificatePem;
    const cases = [
      { method: "GET", path: "/api/v1/ca-certificates", permission: "certificates:read" },
      { method: "POST", path: "/api/v1/ca-certificates", body: { name: "Sec upload", certificatePem: pem }, permission: "certificates:write" },
      { method: "POST", path: "/api/v1/ca-certificates/generate", body: { name: "Sec gen", commonName: "x" }, permission: "certificates:write" },
      { method: "GET", path: `/api/v1/ca-certificates/${ca.id}`, permission: "certificates:read", foreignPath: `/api/v1/ca-certificates/${ca.id}` },
      { method: "GET", path: `/api/v1/ca-certificates/${ca.id}/download`, permission: "certificates:read", foreignPath: `/api/v1/ca-certificates/${ca.id}/download` },
      { method: "GET", path: `/api/v1/ca-certificates/${ca.id}/crl`, permission: "certificates:read", foreignPath: `/api/v1/ca-certificates/${ca.id}/crl` },
      { method: "POST", path: `/api/v1/ca-certificates/${ca.id}/renew`, body: {}, permission: "certificates:write", foreignPath: `/api/v1/ca-certificates/${ca.id}/renew` },
      { method: "PATCH", path: `/api/v1/ca-certificates/${ca.id}/default`, permission: "certificates:admin", foreignPath: `/api/v1/ca-certificates/${ca.id}/default` },
      { method: "POST", path: `/api/v1/ca-certificates/${spare.id}/retire`, permission: "certificates:admin", foreignPath: `/api/v1/ca-certificates/${spare.id}/retire` },
      { method: "DELETE", path: `/api/v1/ca-certificates/${spare.id}`, permission: "certificates:admin", foreignPath: `/api/v1/ca-certificates/${spare.id}` },
    ];
    for (const c of cases) await expectSecured(h, acme, globex, c);
    // Nothing the stranger did changed the CAs.
    expect((await h.api("GET", `/api/v1/ca-certificates/${spare.id}`, { key: acme.key })).body.retiredAt).toBeNull();
    // The tenant itself can use them.
    expect((await h.api("GET", `/api/v1/ca-certificates/${ca.id}/crl`, { key: acme.key })).status).toBe(200);
  });

  it("records refusals of the plain routes in the audit log", async () => {
    const weak = await h.createKey(acme.org.id, ["devices:read"]);
    await h.api("GET", `/api/v1/ca-certificates/${ca.id}/download`, { key: weak });
    const denied = await h.services.prisma.auditEntry.findFirst({
      where: { action: "permission.denied", organizationId: acme.org.id, message: { contains: "caCertificates.download" } },
    });
    expect(denied?.outcome).toBe("denied");
  });
});

describe("the OpenAPI document", () => {
  it("documents every CA operation, including the plain routes", async () => {
    const doc = (await h.api("GET", "/api/v1/openapi.json", { key: null })).body;
    expect(doc.paths["/ca-certificates"].get).toBeDefined();
    expect(doc.paths["/ca-certificates"].post).toBeDefined();
    expect(doc.paths["/ca-certificates/generate"].post).toBeDefined();
    expect(doc.paths["/ca-certificates/{id}"].get).toBeDefined();
    expect(doc.paths["/ca-certificates/{id}"].delete).toBeDefined();
    expect(doc.paths["/ca-certificates/{id}/renew"].post).toBeDefined();
    expect(doc.paths["/ca-certificates/{id}/retire"].post).toBeDefined();
    expect(doc.paths["/ca-certificates/{id}/default"].patch).toBeDefined();
    expect(doc.paths["/ca-certificates/{id}/download"].get.responses["200"].content["application/x-pem-file"]).toBeDefined();
    expect(doc.paths["/ca-certificates/{id}/crl"].get.responses["200"].content["application/pkix-crl"]).toBeDefined();
  });
});

it("never lets a private key out: not in responses, logs or the audit trail", async () => {
  await expectNoPrivateKeyLeaked(h, responses, [...uploadedKeys, ...(await storedCaKeys(h))]);
});
