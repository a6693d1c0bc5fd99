// TPM-held device keys (issue 50, docs/admission.md "TPM-held keys") with Debian's swtpm on
// loopback and tpm2-tools: the EK certificate comes from a test manufacturer CA
// (swtpm_setup --create-ek-cert with our own CA); `fleet-agent enroll --tpm` (the real CLI) makes
// the key in the TPM, the service verifies the evidence against the organization's trusted EK
// CAs; the device is shown attested, heartbeats with tokens the TPM signed, renews re-attested,
// and its state directory holds no private key. Refused with the reason: a software key claiming
// to be TPM-held, an EK outside the pre-authorized list, an EK CA the organization does not trust.
// swtpm proves the protocol, not a hardware root of trust.
import { execFile } from "node:child_process";
import crypto, { X509Certificate } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { AGENT_BIN } from "../../support/agent-lab.js";
import { peersAvailable } from "../../support/peers.js";
import { makeTestCa, startSoftwareTpm, type SoftwareTpm, type TestCa } from "../../support/swtpm.js";
import { ensureCa } from "../agent/fleet-support.js";
import { fakeEngine } from "../agent/fake-engine.js";
import { FleetAgent, renewalDueAt } from "../../../agent/src/agent.js";
import { loadIdentity } from "../../../agent/src/identity-store.js";
import { StateDir } from "../../../agent/src/state-dir.js";
import { eventually } from "../../support/server-process.js";
import { Tpm, type TpmKeyBlob } from "../../../agent/src/tpm.js";
import { DeviceSession } from "../../../agent/src/core/session.js";
import { JsonClient } from "../../../agent/src/core/json-client.js";
import { createCsr, generateDeviceKeys } from "../../../agent/src/core/identity.js";
import { parseTpmPublic } from "../../../src/lib/tpm/structures.js";

const runFile = promisify(execFile);
const WORK = "/dev/shm/fleet-tests";

let h: Harness;
let acme: Tenant;
let globex: Tenant;
let vendor: TestCa;
let otherVendor: TestCa;
let swtpm: SoftwareTpm;
let tpm: Tpm;
let ekHash: string;
const stateDirs: string[] = [];

describe.skipIf(!peersAvailable("swtpm"))("TPM-held device keys (swtpm on loopback)", () => {
  beforeAll(async () => {
    vendor = await makeTestCa("Test TPM Vendor EK CA");
    otherVendor = await makeTestCa("Other TPM Vendor EK CA");
    [h, swtpm] = await Promise.all([createHarness(), startSoftwareTpm(vendor)]);
    process.env.TPM2TOOLS_TCTI = swtpm.tcti; // the Tpm class of the tests' own calls, like the agent's
    tpm = new Tpm();
    acme = await h.createTenant("Acme TPM");
    globex = await h.createTenant("Globex TPM");
    await ensureCa(h, acme.key);
    await ensureCa(h, globex.key);
    const ek = new X509Certificate(swtpm.ekCertificatePem);
    ekHash = crypto.createHash("sha256").update(ek.publicKey.export({ type: "spki", format: "der" })).digest("hex");
  }, 120_000);

  afterAll(async () => {
    delete process.env.TPM2TOOLS_TCTI;
    await swtpm?.stop();
    await h?.close();
    for (const dir of stateDirs) fs.rmSync(dir, { recursive: true, force: true });
  });

  async function token(mode = "auto", key = acme.key) {
    const res = await h.api("POST", "/api/v1/enrollment-tokens", { key, body: { name: `tpm-${mode}`, mode } });
    expect(res.status, res.text).toBe(201);
    return res.body.token as string;
  }

  async function trust(ca: TestCa, key = acme.key) {
    return h.api("POST", "/api/v1/tpm-ek-cas", { key, body: { name: ca.name, certificate: ca.certificatePem } });
  }

  /** The real CLI: fleet-agent enroll --tpm against the swtpm. */
  async function enrollCli(secret: string, deviceId = `tpm-${crypto.randomBytes(4).toString("hex")}`) {
    fs.mkdirSync(WORK, { recursive: true });
    const stateDir = fs.mkdtempSync(path.join(WORK, "tpm-agent-"));
    stateDirs.push(stateDir);
    const args = [AGENT_BIN, "enroll", "--url", h.url, "--token", secret, "--tpm", "--device-id", deviceId, "--state-dir", stateDir];
    try {
      const { stdout } = await runFile(process.execPath, args, { env: { ...process.env, TPM2TOOLS_TCTI: swtpm.tcti }, timeout: 120_000 });
      return { code: 0, stdout, stderr: "", stateDir, deviceId };
    } catch (error) {
      const e = error as { code: number; stdout: string; stderr: string };
      return { code: e.code, stdout: e.stdout, stderr: e.stderr, stateDir, deviceId };
    }
  }

  /** The agent's session over a state directory the CLI wrote, as `fleet-agent run` loads it. */
  function sessionOf(stateDir: string) {
    const identity = JSON.parse(fs.readFileSync(path.join(stateDir, "identity.json"), "utf8"));
    const blob = JSON.parse(fs.readFileSync(path.join(stateDir, identity.keyFile), "utf8")) as TpmKeyBlob;
    const session = new DeviceSession(new JsonClient(h.url, 2, 60_000));
    session.tpm = tpm;
    session.heldKey = tpm.keyOf(blob);
    session.adoptCertificate(identity.deviceId, fs.readFileSync(path.join(stateDir, identity.certificateFile), "utf8"), identity.certificateNotAfter);
    return { session, identity, blob };
  }

  describe("trusted EK manufacturer CAs (/tpm-ek-cas)", () => {
    it("adds (201, audited), refuses a non-CA (400 naming certificate) and a second copy (409), lists; another organization sees none and gets 404", async () => {
      const added = await trust(vendor);
      expect(added.status, added.text).toBe(201);
      expect(added.body).toMatchObject({ name: vendor.name, subject: `CN=${vendor.name}` });
      expect(added.body.fingerprint).toMatch(/^[0-9a-f]{64}$/);
      expect((await trust(vendor)).status).toBe(409);

      const notCa = await h.api("POST", "/api/v1/tpm-ek-cas", { key: acme.key, body: { name: "an EK", certificate: swtpm.ekCertificatePem } });
      expect(notCa.status).toBe(400);
      expect(notCa.body.message).toContain("certificate");
      expect(notCa.body.message).toContain("not a CA certificate");

      const list = await h.api("GET", "/api/v1/tpm-ek-cas", { key: acme.key });
      expect(list.body.items.map((c: { id: string }) => c.id)).toEqual([added.body.id]);
      const audit = await h.api("GET", "/api/v1/audit?action=tpm-ek-cas.create", { key: acme.key });
      expect(audit.body.items[0]).toMatchObject({ outcome: "success", entityId: added.body.id });

      expect((await h.api("GET", "/api/v1/tpm-ek-cas", { key: globex.key })).body.items).toEqual([]);
      expect((await h.api("DELETE", `/api/v1/tpm-ek-cas/${added.body.id}`, { key: globex.key })).status).toBe(404);
    });
  });

  describe("enrollment with a TPM-held key", () => {
    let enrolled: Awaited<ReturnType<typeof enrollCli>>;

    it("fleet-agent enroll --tpm: the device is attested (EK hash, trusted CA), and its state directory holds no private key", async () => {
      enrolled = await enrollCli(await token());
      expect(enrolled.code, enrolled.stderr).toBe(0);
      expect(enrolled.stdout).toContain("the device key is held by the TPM");

      const identity = JSON.parse(fs.readFileSync(path.join(enrolled.stateDir, "identity.json"), "utf8"));
      expect(identity.keyKind).toBe("tpm");
      const status = await runFile(process.execPath, [AGENT_BIN, "status", "--state-dir", enrolled.stateDir], { timeout: 60_000 });
      expect(JSON.parse(status.stdout)).toMatchObject({ deviceId: identity.deviceId, key: "held by the TPM (fleet-agent enroll --tpm)" });
      const device = await h.api("GET", `/api/v1/devices/${identity.deviceId}`, { key: acme.key });
      expect(device.status).toBe(200);
      expect(device.body.attestation).toBe("tpm");

      // no file of the state directory is a private key; the key file is the TPM-wrapped blob
      const files = fs.readdirSync(enrolled.stateDir, { recursive: true, withFileTypes: true }).filter((f) => f.isFile());
      for (const file of files) {
        const text = fs.readFileSync(path.join(file.parentPath, file.name), "utf8");
        expect(text, file.name).not.toMatch(/PRIVATE KEY/);
        expect(() => crypto.createPrivateKey(text), file.name).toThrow();
      }
      const blob = JSON.parse(fs.readFileSync(path.join(enrolled.stateDir, identity.keyFile), "utf8")) as TpmKeyBlob;
      expect(Object.keys(blob).sort()).toEqual(["kind", "private", "public"]);
      // the certificate certifies the TPM's key: fixed to the TPM, made inside it
      const tpmKey = parseTpmPublic(Buffer.from(blob.public, "base64"), "key");
      const certificate = new X509Certificate(fs.readFileSync(path.join(enrolled.stateDir, identity.certificateFile), "utf8"));
      expect(Buffer.from(certificate.publicKey.export({ type: "spki", format: "der" })).equals(tpmKey.spki)).toBe(true);
      expect(tpmKey.attributes & 0x32).toBe(0x32); // fixedTPM | fixedParent | sensitiveDataOrigin

      const audit = await h.api("GET", "/api/v1/audit?action=agent.enroll", { key: acme.key });
      const entry = audit.body.items.find((e: { entityId: string }) => e.entityId === identity.deviceId);
      expect(entry.changes).toMatchObject({ attestation: "tpm", ekHash });
    }, 120_000);

    it("a heartbeat signed by the TPM is taken; a renewal is re-attested by the same TPM, and one without evidence is refused (403)", async () => {
      const { session, identity } = sessionOf(enrolled.stateDir);
      const beat = await session.call("POST", "/api/v1/agent/heartbeat", { status: "online" });
      expect(beat.status, JSON.stringify(beat.body)).toBe(200);
      const device = await h.api("GET", `/api/v1/devices/${identity.deviceId}`, { key: acme.key });
      expect(device.body.status).toBe("online");
      // the token is an ES256 JWT whose signature the certificate's (the TPM's) key verifies
      const [header] = (await session.authorization()).slice("Bearer ".length).split(".");
      expect(JSON.parse(Buffer.from(header, "base64url").toString())).toMatchObject({ alg: "ES256" });

      // a software CSR, authenticated by the TPM-signed token: refused, the key is TPM-held
      const soft = await createCsr(await generateDeviceKeys("ES256"), identity.reportedDeviceId);
      const refused = await h.api("POST", "/api/v1/agent/certificate/renew", { key: null, token: (await session.authorization()).slice(7), body: { csr: soft } });
      expect(refused.status).toBe(403);
      expect(refused.body.message).toContain("renewal must carry the new key's TPM evidence");

      const oldSpki = session.heldKey!.spki;
      const renewed = await session.renewCertificate(identity.reportedDeviceId);
      expect(renewed.status, JSON.stringify(renewed.body)).toBe(200);
      expect(Buffer.from(session.heldKey!.spki).equals(Buffer.from(oldSpki))).toBe(false);
      expect((await session.call("POST", "/api/v1/agent/heartbeat", { status: "online" })).status).toBe(200);
      const audit = await h.api("GET", "/api/v1/audit?action=agent.certificate.renew", { key: acme.key });
      expect(audit.body.items[0].changes).toMatchObject({ attestation: "tpm", ekHash });
      session.close();
    }, 120_000);

    it("the agent's loop (fleet-agent run) loads the TPM key from the state directory, renews re-attested when due, and heartbeats with TPM-signed tokens", async () => {
      const fresh = await enrollCli(await token());
      expect(fresh.code, fresh.stderr).toBe(0);
      const state = new StateDir(fresh.stateDir);
      const before = loadIdentity(state);
      const certificate = fs.readFileSync(path.join(fresh.stateDir, before.certificateFile), "utf8");
      vi.useFakeTimers({ toFake: ["Date"] });
      vi.setSystemTime(renewalDueAt(certificate) + 3_600_000);
      const lines: string[] = [];
      const agent = new FleetAgent({ state, engine: fakeEngine(), print: (line) => lines.push(line), telemetryIntervalMs: 60_000, logIntervalMs: 60_000 });
      try {
        await agent.start();
        await eventually(async () => agent.lastHeartbeatAt ?? undefined, 60_000, "a heartbeat after the re-attested renewal");
      } finally {
        await agent.stop();
        vi.useRealTimers();
      }
      expect(lines.filter((l) => l.startsWith("error: "))).toEqual([]);
      const after = loadIdentity(state);
      expect(after.keyKind).toBe("tpm");
      expect(after.keyFile).not.toBe(before.keyFile);
      expect(after.certificateId).not.toBe(before.certificateId);
      expect(fs.existsSync(path.join(fresh.stateDir, before.keyFile))).toBe(false);
      const device = await h.api("GET", `/api/v1/devices/${after.deviceId}`, { key: acme.key });
      expect(device.body).toMatchObject({ status: "online", attestation: "tpm" });
      const audit = await h.api("GET", "/api/v1/audit?action=agent.certificate.renew", { key: acme.key });
      expect(audit.body.items.find((e: { entityId: string }) => e.entityId === after.certificateId).changes).toMatchObject({ attestation: "tpm", ekHash });
    }, 180_000);

    it("an approval token puts the attested device in the lobby showing its verified TPM; a pre-authorized EK hash admits it at once", async () => {
      const pending = await enrollCli(await token("approval"));
      expect(pending.code, pending.stderr).toBe(0);
      const requests = await h.api("GET", "/api/v1/enrollment-requests?state=pending", { key: acme.key });
      const request = requests.body.items.find((r: { reportedDeviceId: string }) => r.reportedDeviceId === pending.deviceId);
      expect(request.attestation).toMatchObject({ ekHash, trustedCaName: vendor.name, manufacturer: "id:00001014" });

      const listed = `factory-${crypto.randomBytes(3).toString("hex")}`;
      const imported = await h.api("POST", "/api/v1/preauthorized-devices/import", { key: acme.key, body: { devices: [{ deviceId: listed, ekHash, labels: { line: "7" } }] } });
      expect(imported.status, imported.text).toBe(200);
      const admitted = await enrollCli(await token("approval"), listed);
      expect(admitted.code, admitted.stderr).toBe(0);
      const identity = JSON.parse(fs.readFileSync(path.join(admitted.stateDir, "identity.json"), "utf8"));
      const device = await h.api("GET", `/api/v1/devices/${identity.deviceId}`, { key: acme.key });
      expect(device.body).toMatchObject({ admission: "admitted", attestation: "tpm", labels: { line: "7" } });
      // the entry leaves the list again (the refusals below need this TPM's EK off it)
      const entries = await h.api("GET", `/api/v1/preauthorized-devices?search=${listed}`, { key: acme.key });
      expect((await h.api("DELETE", `/api/v1/preauthorized-devices/${entries.body.items[0].id}`, { key: acme.key })).status).toBe(200);
    }, 180_000);
  });

  describe("refusals, with the reason", () => {
    it("a software key claiming to be TPM-held (genuine TPM evidence, another key in the CSR): 403, nothing enrolled", async () => {
      const secret = await token();
      const { evidence } = await tpm.attestNewKey(async (input) => {
        const res = await h.api("POST", "/api/v1/agent/tpm/challenge", { key: null, body: input });
        expect(res.status, res.text).toBe(200);
        return res.body;
      });
      const reportedDeviceId = `soft-${crypto.randomBytes(3).toString("hex")}`;
      const csr = await createCsr(await generateDeviceKeys("ES256"), reportedDeviceId);
      const res = await h.api("POST", "/api/v1/agent/enroll", { key: null, body: { enrollmentToken: secret, reportedDeviceId, csr, tpm: evidence } });
      expect(res.status).toBe(403);
      expect(res.body.message).toContain("The CSR's key is not the key the TPM certified");
      const devices = await h.api("GET", `/api/v1/devices?search=${reportedDeviceId}`, { key: acme.key });
      expect(devices.body.items).toEqual([]);
      const audit = await h.api("GET", "/api/v1/audit?action=agent.enroll&outcome=denied", { key: acme.key });
      expect(audit.body.items[0].message).toContain("software key cannot claim to be held by a TPM");
    }, 120_000);

    it("a software key loaded into the TPM and certified there (tpm2_loadexternal): 403, the key was not made inside the TPM", async () => {
      const dir = fs.mkdtempSync(path.join(WORK, "tpm-external-"));
      stateDirs.push(dir);
      const soft = await generateDeviceKeys("ES256");
      const pkcs8 = Buffer.from(await crypto.webcrypto.subtle.exportKey("pkcs8", soft.keys.privateKey));
      fs.writeFileSync(path.join(dir, "soft.pem"), `-----BEGIN PRIVATE KEY-----\n${pkcs8.toString("base64")}\n-----END PRIVATE KEY-----\n`);
      // the tools flush the TPM's few object slots after each step (no resource manager on swtpm's socket)
      const tools = (script: string) => runFile("bash", ["-ec", `fl() { tpm2_flushcontext -t; tpm2_flushcontext -l; tpm2_flushcontext -s; }; fl; ${script}; fl`], { cwd: dir, env: { ...process.env, TPM2TOOLS_TCTI: swtpm.tcti }, timeout: 60_000 });
      await tools("tpm2_createek -Q -G rsa -c ek.ctx; fl; tpm2_createak -Q -C ek.ctx -c ak.ctx -G ecc -g sha256 -s ecdsa -u ak.pub");
      const challenge = await h.api("POST", "/api/v1/agent/tpm/challenge", { key: null, body: { ekCertificate: swtpm.ekCertificatePem, akPublic: fs.readFileSync(path.join(dir, "ak.pub")).toString("base64") } });
      expect(challenge.status, challenge.text).toBe(200);
      fs.writeFileSync(path.join(dir, "credential"), Buffer.from(challenge.body.credential, "base64"));
      await tools([
        "tpm2_startauthsession --policy-session -S session.ctx", "tpm2_policysecret -Q -S session.ctx -c e",
        "tpm2_activatecredential -Q -c ak.ctx -C ek.ctx -i credential -o secret -P session:session.ctx", "fl",
        "tpm2_loadexternal -Q -C n -G ecc -r soft.pem -c ext.ctx -a 'userwithauth|sign'", "fl", "tpm2_readpublic -Q -c ext.ctx -o ext.pub", "fl",
        "tpm2_certify -Q -c ext.ctx -C ak.ctx -g sha256 -o ext.attest -s ext.sig",
      ].join("; "));
      const read = (name: string) => fs.readFileSync(path.join(dir, name)).toString("base64");
      const reportedDeviceId = `external-${crypto.randomBytes(3).toString("hex")}`;
      const res = await h.api("POST", "/api/v1/agent/enroll", {
        key: null,
        body: {
          enrollmentToken: await token(), reportedDeviceId, csr: await createCsr(soft, reportedDeviceId),
          tpm: {
            ekCertificate: swtpm.ekCertificatePem, akPublic: read("ak.pub"), challengeExpiresAt: challenge.body.expiresAt, activatedSecret: read("secret"),
            keyPublic: read("ext.pub"), certifyInfo: read("ext.attest"), certifySignature: read("ext.sig"),
          },
        },
      });
      expect(res.status).toBe(403);
      expect(res.body.message).toContain("The certified key was not created inside the TPM");
      expect((await h.api("GET", `/api/v1/devices?search=${reportedDeviceId}`, { key: acme.key })).body.items).toEqual([]);
    }, 120_000);

    it("an EK outside the pre-authorized list (token admits pre-authorized devices only): 403 naming the EK; listed with another EK: 409", async () => {
      const other = crypto.randomBytes(32).toString("hex");
      const listed = `listed-${crypto.randomBytes(3).toString("hex")}`;
      const imported = await h.api("POST", "/api/v1/preauthorized-devices/import", { key: acme.key, body: { devices: [{ deviceId: listed, ekHash: other }] } });
      expect(imported.status, imported.text).toBe(200);

      const outside = await enrollCli(await token("preauthorized"));
      expect(outside.code).toBe(78);
      expect(outside.stderr).toContain("enrollment refused (403)");
      expect(outside.stderr).toContain(`endorsement key sha256:${ekHash.slice(0, 16)}`);
      expect(outside.stderr).toContain("not on the organization's pre-authorized list");
      expect(fs.existsSync(path.join(outside.stateDir, "identity.json"))).toBe(false);

      const mismatch = await enrollCli(await token("preauthorized"), listed);
      expect(mismatch.code).toBe(1);
      expect(mismatch.stderr).toContain("enrollment refused (409)");
      expect(mismatch.stderr).toContain(`pre-authorized with another TPM (endorsement key sha256:${other.slice(0, 16)}`);
      const conflicts = await h.api("GET", "/api/v1/enrollment-requests?state=conflict", { key: acme.key });
      expect(conflicts.body.items.find((r: { reportedDeviceId: string }) => r.reportedDeviceId === listed).attestation).toMatchObject({ ekHash });
    }, 180_000);

    it("an EK certificate of a CA the organization does not trust, or of none: 403 naming the issuer", async () => {
      const none = await enrollCli(await token("auto", globex.key));
      expect(none.code).toBe(78);
      expect(none.stderr).toContain("trusts no TPM EK manufacturer CA");

      expect((await trust(otherVendor, globex.key)).status).toBe(201);
      const untrusted = await enrollCli(await token("auto", globex.key));
      expect(untrusted.code).toBe(78);
      expect(untrusted.stderr).toContain(`The TPM's EK certificate (issuer "CN=${vendor.name}") does not chain to an EK manufacturer CA the organization trusts`);
      expect((await h.api("GET", "/api/v1/devices", { key: globex.key })).body.items).toEqual([]);
    }, 180_000);

    it("a challenge for an EK that is not RSA or an AK that is not a restricted TPM key: 400 naming the field", async () => {
      const ecEk = await h.api("POST", "/api/v1/agent/tpm/challenge", { key: null, body: { ekCertificate: vendor.certificatePem, akPublic: "AAAA" } });
      expect(ecEk.status).toBe(400);
      expect(ecEk.body.message).toContain("ekCertificate");
      const badAk = await h.api("POST", "/api/v1/agent/tpm/challenge", { key: null, body: { ekCertificate: swtpm.ekCertificatePem, akPublic: "AAAA" } });
      expect(badAk.status).toBe(400);
      expect(badAk.body.message).toContain("akPublic");
    });
  });
});
