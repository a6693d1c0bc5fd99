// Certificates across the organization (list with filters, expiring, statistics) and the
// CA revocation list, parsed and verified with @peculiar/x509.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { REVOCATION_REASON_CODES, REVOCATION_REASONS } from "../../../src/lib/pki/index.js";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { expectSecured } from "../../support/security.js";
import { createDevice, enrollCertificate, expectNoPrivateKeyLeaked, recordResponses, storedCaKeys, x509 } from "./support.js";

let h: Harness;
let acme: Tenant;
let globex: Tenant;
let responses: string[];
let caA: any;
let caB: any;
let device1: string;
let device2: string;
/** what the fleet looks like after beforeAll */
const ids: Record<string, string> = {};

beforeAll(async () => {
  h = await createHarness();
  responses = recordResponses(h);
  acme = await h.createTenant("Acme Fleet");
  globex = await h.createTenant("Globex Fleet");
  const gen = (name: string) => h.api("POST", "/api/v1/ca-certificates/generate", { key: acme.key, body: { name, commonName: `${name} CA` } });
  caA = (await gen("A")).body;
  caB = (await gen("B")).body;
  device1 = await createDevice(h, acme.org.id, "one");
  device2 = await createDevice(h, acme.org.id, "two");

  // CA A (default): device1 valid (365 d), device1 soon (10 d), device2 revoked, device2 expired.
  ids.valid = (await enrollCertificate(h, acme.org.id, device1)).record.id;
  ids.soon = (await enrollCertificate(h, acme.org.id, device1, { validityDays: 10 })).record.id;
  ids.revoked = (await enrollCertificate(h, acme.org.id, device2)).record.id;
  ids.expired = (await enrollCertificate(h, acme.org.id, device2)).record.id;
  await h.api("POST", `/api/v1/devices/${device2}/certificates/${ids.revoked}/revoke`, { key: acme.key, body: { reason: "Key compromise" } });
  await h.services.prisma.deviceCertificate.update({ where: { id: ids.expired }, data: { notAfter: new Date(Date.now() - 60_000) } });
  // CA B: device2 soon (20 d).
  await h.api("PATCH", `/api/v1/ca-certificates/${caB.id}/default`, { key: acme.key });
  ids.soonB = (await enrollCertificate(h, acme.org.id, device2, { validityDays: 20 })).record.id;
  // Globex has its own certificates, never seen by Acme.
  await h.api("POST", "/api/v1/ca-certificates/generate", { key: globex.key, body: { name: "G", commonName: "G CA" } });
  ids.globex = (await enrollCertificate(h, globex.org.id, await createDevice(h, globex.org.id))).record.id;
});
afterAll(() => h?.close());

const idsOf = (res: { body: { items: { id: string }[] } }) => res.body.items.map((c) => c.id).sort();
const sorted = (...list: string[]) => [...list].sort();

describe("list all certificates", () => {
  it("lists the organization's certificates newest first", async () => {
    const res = await h.api("GET", "/api/v1/certificates", { key: acme.key });
    expect(res.status).toBe(200);
    expect(res.body.total).toBe(5);
    expect(res.body.items[0].id).toBe(ids.soonB);
    expect(idsOf(res)).toEqual(sorted(ids.valid, ids.soon, ids.revoked, ids.expired, ids.soonB));
    expect(res.body.items.find((c: { id: string }) => c.id === ids.expired).status).toBe("expired");
  });

  it.each([
    ["status=valid", () => [ids.valid, ids.soon, ids.soonB]],
    ["status=expired", () => [ids.expired]],
    ["status=revoked", () => [ids.revoked]],
    ["deviceId=DEVICE1", () => [ids.valid, ids.soon]],
    ["caId=CAB", () => [ids.soonB]],
    ["caId=CAA&status=valid", () => [ids.valid, ids.soon]],
    ["deviceId=DEVICE2&status=revoked", () => [ids.revoked]],
  ])("filters by %s", async (query, expected) => {
    const q = query.replace("DEVICE1", device1).replace("DEVICE2", device2).replace("CAA", caA.id).replace("CAB", caB.id);
    const res = await h.api("GET", `/api/v1/certificates?${q}`, { key: acme.key });
    expect(res.status, res.text).toBe(200);
    expect(idsOf(res)).toEqual(sorted(...expected()));
    expect(res.body.total).toBe(expected().length);
  });

  it("pages, and refuses bad filters with 400", async () => {
    const page = await h.api("GET", "/api/v1/certificates?limit=2&offset=2", { key: acme.key });
    expect(page.body.items).toHaveLength(2);
    expect(page.body).toMatchObject({ total: 5, hasMore: true });
    const last = await h.api("GET", "/api/v1/certificates?limit=2&offset=4", { key: acme.key });
    expect(last.body).toMatchObject({ total: 5, hasMore: false });
    expect((await h.api("GET", "/api/v1/certificates?status=lost", { key: acme.key })).status).toBe(400);
    expect((await h.api("GET", "/api/v1/certificates?deviceId=x", { key: acme.key })).status).toBe(400);
    expect((await h.api("GET", "/api/v1/certificates?limit=201", { key: acme.key })).status).toBe(400);
  });
});

describe("expiring", () => {
  it("lists valid certificates expiring within 30 days by default, soonest first", async () => {
    const res = await h.api("GET", "/api/v1/certificates/expiring", { key: acme.key });
    expect(res.status).toBe(200);
    expect(res.body.items.map((c: { id: string }) => c.id)).toEqual([ids.soon, ids.soonB]);
    expect(res.body.total).toBe(2);
    // Each names its device, so that the list says whom to act on.
    expect(res.body.items.map((c: { deviceId: string; deviceName: string }) => [c.deviceId, c.deviceName])).toEqual([[device1, "one"], [device2, "two"]]);
  });

  it("names a deleted device's certificate as without a device (null)", async () => {
    const t = await h.createTenant();
    await h.api("POST", "/api/v1/ca-certificates/generate", { key: t.key, body: { name: "T", commonName: "T CA" } });
    const device = await createDevice(h, t.org.id, "gone");
    await enrollCertificate(h, t.org.id, device, { validityDays: 5 });
    await h.services.prisma.device.delete({ where: { id: device } });
    const res = await h.api("GET", "/api/v1/certificates/expiring", { key: t.key });
    expect(res.body.items.map((c: { deviceId: string; deviceName: string | null }) => [c.deviceId, c.deviceName])).toEqual([[device, null]]);
  });

  it("takes ?days= and leaves out revoked, expired and already renewed certificates", async () => {
    expect((await h.api("GET", "/api/v1/certificates/expiring?days=15", { key: acme.key })).body.items.map((c: { id: string }) => c.id)).toEqual([ids.soon]);
    expect(idsOf(await h.api("GET", "/api/v1/certificates/expiring?days=400", { key: acme.key }))).toEqual(sorted(ids.valid, ids.soon, ids.soonB));
    expect((await h.api("GET", "/api/v1/certificates/expiring?days=0", { key: acme.key })).status).toBe(400);

    const t = await h.createTenant();
    await h.api("POST", "/api/v1/ca-certificates/generate", { key: t.key, body: { name: "T", commonName: "T CA" } });
    const device = await createDevice(h, t.org.id);
    const old = await enrollCertificate(h, t.org.id, device, { validityDays: 5 });
    expect((await h.api("GET", "/api/v1/certificates/expiring", { key: t.key })).body.total).toBe(1);
    const renewed = await h.api("POST", `/api/v1/devices/${device}/certificates/${old.record.id}/renew`, { key: t.key, body: {} });
    expect(renewed.status).toBe(201);
    expect((await h.api("GET", "/api/v1/certificates/expiring", { key: t.key })).body.total).toBe(0);
    // ... unless the renewal itself was revoked: then the old one needs attention again.
    await h.api("POST", `/api/v1/devices/${device}/certificates/${renewed.body.id}/revoke`, { key: t.key, body: { reason: "Other" } });
    expect((await h.api("GET", "/api/v1/certificates/expiring", { key: t.key })).body.items.map((c: { id: string }) => c.id)).toEqual([old.record.id]);
  });
});

describe("statistics", () => {
  it("counts valid, expiring soon, expired and revoked, overall and by CA", async () => {
    const res = await h.api("GET", "/api/v1/certificates/stats", { key: acme.key });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ total: 5, valid: 3, expiringSoon: 2, expired: 1, revoked: 1, expiringWithinDays: 30 });
    expect(res.body.byCa).toEqual([
      { caId: caA.id, name: "A", isDefault: false, total: 4, valid: 2, expiringSoon: 1, expired: 1, revoked: 1 },
      { caId: caB.id, name: "B", isDefault: true, total: 1, valid: 1, expiringSoon: 1, expired: 0, revoked: 0 },
    ]);
    const narrow = await h.api("GET", "/api/v1/certificates/stats?days=15", { key: acme.key });
    expect(narrow.body).toMatchObject({ expiringSoon: 1, expiringWithinDays: 15 });
  });

  it("answers zeros for an organization without certificates", async () => {
    const t = await h.createTenant();
    const res = await h.api("GET", "/api/v1/certificates/stats", { key: t.key });
    expect(res.body).toEqual({ total: 0, valid: 0, expiringSoon: 0, expired: 0, revoked: 0, expiringWithinDays: 30, byCa: [] });
  });
});

describe("the revocation list", () => {
  const fetchCrl = async (caId: string, format?: "pem" | "der", key = acme.key) => {
    const res = await fetch(`${h.url}/api/v1/ca-certificates/${caId}/crl${format ? `?format=${format}` : ""}`, { headers: { "x-api-key": key } });
    const bytes = new Uint8Array(await res.arrayBuffer());
    return { res, bytes, text: Buffer.from(bytes).toString("utf8") };
  };
  const crlNumberOf = (crl: x509.X509Crl) => BigInt(`0x${Buffer.from(new Uint8Array(crl.getExtension("2.5.29.20")!.value).subarray(2)).toString("hex")}`);

  it("answers a DER CRL signed by the CA that lists every revoked certificate with its reason", async () => {
    const { res, bytes } = await fetchCrl(caA.id);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/pkix-crl");
    expect(res.headers.get("content-disposition")).toBe('attachment; filename="A.crl"');
    const crl = new x509.X509Crl(bytes);
    const caCert = new x509.X509Certificate(caA.certificate);
    expect(crl.issuer).toBe("CN=A CA");
    expect(await crl.verify({ publicKey: caCert.publicKey })).toBe(true);
    expect(await crl.verify({ publicKey: new x509.X509Certificate(caB.certificate).publicKey })).toBe(false);
    const revoked = await h.services.prisma.deviceCertificate.findUniqueOrThrow({ where: { id: ids.revoked } });
    expect(crl.entries.map((e) => e.serialNumber)).toEqual([revoked.serialNumber]);
    expect(crl.entries[0]!.reason).toBe(x509.X509CrlReason.keyCompromise);
    expect(crl.findRevoked(new x509.X509Certificate(revoked.certificatePem))).not.toBeNull();
    expect(crl.nextUpdate!.getTime()).toBeGreaterThan(Date.now() + 6 * 24 * 3600_000);
    // CA B has revoked nothing.
    expect(new x509.X509Crl((await fetchCrl(caB.id)).bytes).entries).toHaveLength(0);
  });

  it("answers PEM with ?format=pem, the same list", async () => {
    const der = await fetchCrl(caA.id);
    const pem = await fetchCrl(caA.id, "pem");
    expect(pem.res.status).toBe(200);
    expect(pem.res.headers.get("content-type")).toContain("application/x-pem-file");
    expect(pem.text).toMatch(/^-----BEGIN X509 CRL-----\n[\s\S]+\n-----END X509 CRL-----\n$/);
    const crl = new x509.X509Crl(pem.text);
    expect(Buffer.from(crl.rawData)).toEqual(Buffer.from(der.bytes));
    expect(await crl.verify({ publicKey: new x509.X509Certificate(caA.certificate).publicKey })).toBe(true);
    expect((await fetchCrl(caA.id, "xml" as "pem")).res.status).toBe(400);
  });

  it("is signed anew, with the next cRLNumber, after each revocation; unchanged otherwise", async () => {
    const before = new x509.X509Crl((await fetchCrl(caA.id)).bytes);
    const again = new x509.X509Crl((await fetchCrl(caA.id)).bytes);
    expect(crlNumberOf(again)).toBe(crlNumberOf(before));

    const issued = [];
    for (const reason of REVOCATION_REASONS) {
      await h.api("PATCH", `/api/v1/ca-certificates/${caA.id}/default`, { key: acme.key });
      const { record } = await enrollCertificate(h, acme.org.id, device1);
      const res = await h.api("POST", `/api/v1/devices/${device1}/certificates/${record.id}/revoke`, { key: acme.key, body: { reason } });
      expect(res.status).toBe(200);
      issued.push({ serial: record.serialNumber, reason });
    }
    const after = new x509.X509Crl((await fetchCrl(caA.id)).bytes);
    expect(crlNumberOf(after)).toBe(crlNumberOf(before) + 1n);
    expect(await after.verify({ publicKey: new x509.X509Certificate(caA.certificate).publicKey })).toBe(true);
    const bySerial = new Map(after.entries.map((e) => [e.serialNumber, e]));
    expect(bySerial.size).toBe(1 + REVOCATION_REASONS.length);
    for (const { serial, reason } of issued) {
      // "Other" is unspecified (0), which RFC 5280 encodes by leaving the reason code out.
      expect(bySerial.get(serial)?.reason ?? 0, reason).toBe(REVOCATION_REASON_CODES[reason]);
    }
  });

  it("is shared by a renewed CA and its predecessor (same name and key)", async () => {
    const renewed = await h.api("POST", `/api/v1/ca-certificates/${caA.id}/renew`, { key: acme.key, body: { name: "A renewed" } });
    expect(renewed.status).toBe(201);
    const oldList = (await fetchCrl(caA.id)).bytes;
    const newList = (await fetchCrl(renewed.body.id)).bytes;
    expect(Buffer.from(newList)).toEqual(Buffer.from(oldList));
    expect(await new x509.X509Crl(newList).verify({ publicKey: new x509.X509Certificate(renewed.body.certificate).publicKey })).toBe(true);
  });

  it("answers 404 for an unknown CA", async () => {
    expect((await fetchCrl(crypto.randomUUID())).res.status).toBe(404);
    expect((await fetchCrl("not-a-uuid")).res.status).toBe(400);
  });
});

describe("security on every organization-wide operation", () => {
  it("401 without or with bad credentials, 403 without certificates:read, and only the caller's organization", async () => {
    for (const path of ["/api/v1/certificates", "/api/v1/certificates/expiring", "/api/v1/certificates/stats"]) {
      await expectSecured(h, acme, globex, { method: "GET", path, permission: "certificates:read" });
    }
    // Tenancy: Globex sees its own certificate only, and cannot filter its way into Acme's.
    const globexList = await h.api("GET", "/api/v1/certificates?limit=200", { key: globex.key });
    expect(globexList.body.items.map((c: { id: string }) => c.id)).toEqual([ids.globex]);
    expect((await h.api("GET", `/api/v1/certificates?deviceId=${device1}`, { key: globex.key })).body.total).toBe(0);
    expect((await h.api("GET", `/api/v1/certificates?caId=${caA.id}`, { key: globex.key })).body.total).toBe(0);
    expect((await h.api("GET", "/api/v1/certificates/expiring?days=400", { key: globex.key })).body.items.map((c: { id: string }) => c.id)).toEqual([ids.globex]);
    const stats = await h.api("GET", "/api/v1/certificates/stats", { key: globex.key });
    expect(stats.body).toMatchObject({ total: 1, valid: 1 });
    expect(stats.body.byCa).toHaveLength(1);
    const acmeList = await h.api("GET", "/api/v1/certificates?limit=200", { key: acme.key });
    expect(acmeList.body.items.map((c: { id: string }) => c.id)).not.toContain(ids.globex);
  });
});

it("never lets a private key out: not in responses, logs or the audit trail", async () => {
  await expectNoPrivateKeyLeaked(h, responses, await storedCaKeys(h));
});
