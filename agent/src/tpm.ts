// The device key held by a TPM 2.0 (fleet-agent enroll --tpm; docs/agent.md, "Enrolling with a
// TPM"), through Debian's tpm2-tools. The key is made inside the TPM under the owner
// hierarchy's storage key (fixedTPM, fixedParent, sensitiveDataOrigin: it cannot leave it);
// the state directory keeps only its public part and its private part *wrapped by the TPM*,
// which no other TPM (and nothing outside this one) can unwrap.
//
// Why tpm2-tools and not a library: the npm TPM bindings are native modules that speak to
// /dev/tpmrm0 or Windows' TBS only, pre-1.0; tpm2-tools is the TCG reference stack's command
// line, packaged by every distribution, and takes any TCTI: the kernel's resource manager by
// default, swtpm's socket in the tests (TPM2TOOLS_TCTI=swtpm:host=127.0.0.1,port=N).
//
// Without a resource manager (swtpm's socket) transient objects stay loaded after a tool
// exits and the TPM has room for only three: every operation flushes them again.
import { execFile } from "node:child_process";
import { createPublicKey } from "node:crypto";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import type { HeldKey, TpmAttester, TpmChallenge, TpmEvidence } from "./core/identity.js";

/** What the state directory keeps of a TPM-held key (base64 TPM2B_PUBLIC and TPM2B_PRIVATE). */
export interface TpmKeyBlob {
  kind: "tpm";
  public: string;
  private: string;
}

/** The TCG's NV index of the RSA 2048 EK certificate (EK Credential Profile). */
const EK_CERTIFICATE_INDEX = "0x01c00002";
const DEVICE_KEY_ATTRIBUTES = "fixedtpm|fixedparent|sensitivedataorigin|userwithauth|sign";

export class TpmError extends Error {}

function run(tool: string, args: string[], cwd: string): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    execFile(tool, args, { cwd, encoding: "buffer", maxBuffer: 1 << 20, timeout: 60_000 }, (error, stdout, stderr) => {
      if (!error) return resolve(stdout);
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return reject(new TpmError(`${tool} not found: the TPM needs Debian's tpm2-tools (apt-get install tpm2-tools)`));
      const said = stderr.toString("utf8").split("\n").filter((l) => l.startsWith("ERROR")).slice(-2).join("; ");
      reject(new TpmError(`${tool} failed: ${said || error.message}`));
    });
  });
}

/** The uncompressed P-256 point at the end of a TPM2B_PUBLIC made from our template, as SPKI DER. */
function spkiOf(tpmPublic: Buffer): Buffer {
  const y = tpmPublic.subarray(tpmPublic.length - 32);
  const x = tpmPublic.subarray(tpmPublic.length - 66, tpmPublic.length - 34);
  if (tpmPublic.readUInt16BE(tpmPublic.length - 34) !== 32 || tpmPublic.readUInt16BE(tpmPublic.length - 68) !== 32) throw new TpmError("the TPM's key is not a P-256 key");
  return createPublicKey({ key: { kty: "EC", crv: "P-256", x: x.toString("base64url"), y: y.toString("base64url") }, format: "jwk" }).export({ type: "spki", format: "der" });
}

/** TPMT_SIGNATURE (ECDSA) to IEEE P1363 r||s, what JWS ES256 and WebCrypto use. */
function p1363Of(signature: Buffer): Buffer {
  let at = 4; // sigAlg, hashAlg
  const r = signature.subarray(at + 2, at + 2 + signature.readUInt16BE(at));
  at += 2 + r.length;
  const s = signature.subarray(at + 2, at + 2 + signature.readUInt16BE(at));
  const out = Buffer.alloc(64);
  r.copy(out, 32 - r.length);
  s.copy(out, 64 - s.length);
  return out;
}

/** A DER certificate read from an NV index is padded to the index's size: cut it at its own length. */
function derLength(data: Buffer): number {
  if (data[0] !== 0x30) throw new TpmError(`the TPM's NV index ${EK_CERTIFICATE_INDEX} holds no EK certificate`);
  const first = data[1];
  if (first < 0x80) return 2 + first;
  const octets = first & 0x7f;
  return 2 + octets + data.subarray(2, 2 + octets).reduce((n, b) => n * 256 + b, 0);
}

export class Tpm implements TpmAttester {
  /** one operation at a time: they share the TPM's few object slots */
  private queue: Promise<unknown> = Promise.resolve();

  private exclusive<T>(work: (dir: string) => Promise<T>): Promise<T> {
    const next = this.queue.then(async () => {
      const dir = await mkdtemp(path.join(os.tmpdir(), "fleet-agent-tpm-"));
      try {
        return await work(dir);
      } finally {
        await this.flush(dir).catch(() => undefined);
        await rm(dir, { recursive: true, force: true });
      }
    });
    this.queue = next.catch(() => undefined);
    return next;
  }

  private async flush(dir: string) {
    for (const what of ["-t", "-l", "-s"]) await run("tpm2_flushcontext", [what], dir);
  }

  /** Loads the key under the (re-derived, always identical) storage primary key as key.ctx. */
  private async load(dir: string, blob: TpmKeyBlob) {
    await writeFile(path.join(dir, "key.pub"), Buffer.from(blob.public, "base64"));
    await writeFile(path.join(dir, "key.priv"), Buffer.from(blob.private, "base64"));
    await run("tpm2_createprimary", ["-Q", "-C", "o", "-g", "sha256", "-G", "ecc", "-c", "primary.ctx"], dir);
    await run("tpm2_flushcontext", ["-t"], dir);
    await run("tpm2_load", ["-Q", "-C", "primary.ctx", "-u", "key.pub", "-r", "key.priv", "-c", "key.ctx"], dir);
    await run("tpm2_flushcontext", ["-t"], dir);
  }

  /** The signer of a key made earlier (its blob from the state directory). */
  keyOf(blob: TpmKeyBlob): HeldKey {
    return {
      spki: spkiOf(Buffer.from(blob.public, "base64")),
      stored: blob,
      sign: (data) => this.exclusive(async (dir) => {
        await this.load(dir, blob);
        await writeFile(path.join(dir, "data"), data);
        await run("tpm2_sign", ["-Q", "-c", "key.ctx", "-g", "sha256", "-s", "ecdsa", "-o", "signature", "data"], dir);
        return p1363Of(await readFile(path.join(dir, "signature")));
      }),
    };
  }

  /**
   * A new ECDSA P-256 key made inside the TPM, and the evidence that it is there: the EK
   * certificate, an attestation key (AK) made under the EK, the secret of the service's
   * credential for that pair (only this TPM can activate it), and TPM2_Certify of the new key by
   * the AK.
   */
  attestNewKey(challenge: TpmChallenge): Promise<{ key: HeldKey; evidence: TpmEvidence }> {
    return this.exclusive(async (dir) => {
      const at = (name: string) => path.join(dir, name);
      await run("tpm2_createprimary", ["-Q", "-C", "o", "-g", "sha256", "-G", "ecc", "-c", "primary.ctx"], dir);
      await run("tpm2_flushcontext", ["-t"], dir);
      await run("tpm2_create", ["-Q", "-C", "primary.ctx", "-G", "ecc256:ecdsa-sha256", "-a", DEVICE_KEY_ATTRIBUTES, "-u", "key.pub", "-r", "key.priv"], dir);
      await run("tpm2_flushcontext", ["-t"], dir);
      const blob: TpmKeyBlob = { kind: "tpm", public: (await readFile(at("key.pub"))).toString("base64"), private: (await readFile(at("key.priv"))).toString("base64") };

      await run("tpm2_nvread", ["-C", "o", "-o", "ek.der", EK_CERTIFICATE_INDEX], dir).catch((error: Error) => {
        throw new TpmError(`the TPM has no readable EK certificate at NV index ${EK_CERTIFICATE_INDEX} (${error.message})`);
      });
      const ekRaw = await readFile(at("ek.der"));
      const ekDer = ekRaw.subarray(0, derLength(ekRaw));
      const ekCertificate = `-----BEGIN CERTIFICATE-----\n${ekDer.toString("base64").replace(/.{1,64}/g, "$&\n")}-----END CERTIFICATE-----\n`;
      await run("tpm2_createek", ["-Q", "-G", "rsa", "-c", "ek.ctx"], dir);
      await run("tpm2_flushcontext", ["-t"], dir);
      await run("tpm2_createak", ["-Q", "-C", "ek.ctx", "-c", "ak.ctx", "-G", "ecc", "-g", "sha256", "-s", "ecdsa", "-u", "ak.pub"], dir);
      await this.flush(dir);
      const akPublic = (await readFile(at("ak.pub"))).toString("base64");

      const asked = await challenge({ ekCertificate, akPublic });
      await writeFile(at("credential"), Buffer.from(asked.credential, "base64"));
      await run("tpm2_startauthsession", ["--policy-session", "-S", "session.ctx"], dir);
      await run("tpm2_policysecret", ["-Q", "-S", "session.ctx", "-c", "e"], dir);
      await run("tpm2_activatecredential", ["-Q", "-c", "ak.ctx", "-C", "ek.ctx", "-i", "credential", "-o", "secret", "-P", "session:session.ctx"], dir);
      await this.flush(dir);

      await this.load(dir, blob);
      await run("tpm2_certify", ["-Q", "-c", "key.ctx", "-C", "ak.ctx", "-g", "sha256", "-o", "certify.bin", "-s", "certify.sig"], dir);
      const evidence: TpmEvidence = {
        ekCertificate,
        akPublic,
        challengeExpiresAt: asked.expiresAt,
        activatedSecret: (await readFile(at("secret"))).toString("base64"),
        keyPublic: blob.public,
        certifyInfo: (await readFile(at("certify.bin"))).toString("base64"),
        certifySignature: (await readFile(at("certify.sig"))).toString("base64"),
      };
      return { key: this.keyOf(blob), evidence };
    });
  }
}
