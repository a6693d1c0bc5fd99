// A software TPM 2.0 for the TPM-held key tests (docs/admission.md, "TPM-held keys"): Debian's
// swtpm, manufactured by swtpm_setup with an EK certificate signed by a test manufacturer CA of
// our own (swtpm_localca with our key and certificate), serving on loopback TCP. It proves the
// protocol, not a hardware root of trust: anyone can run a swtpm and a CA like this one.
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { createPublicKey, generateKeyPairSync, webcrypto } from "node:crypto";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { promisify } from "node:util";
import { x509 } from "../../src/lib/pki/provider.js";
import { freePort } from "./oci-registry.js";

const runFile = promisify(execFile);
const WORK = "/dev/shm/fleet-tests";

export interface TestCa {
  name: string;
  certificatePem: string;
  keyPem: string;
}

/** A self-signed ECDSA P-256 CA, as a TPM manufacturer's EK CA stands in the tests. */
export async function makeTestCa(name: string): Promise<TestCa> {
  const { privateKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
  const keyPem = privateKey.export({ type: "pkcs8", format: "pem" }).toString();
  const der = privateKey.export({ type: "pkcs8", format: "der" });
  const algorithm = { name: "ECDSA", namedCurve: "P-256" };
  const cryptoKey = await webcrypto.subtle.importKey("pkcs8", der, algorithm, true, ["sign"]);
  const publicKey = await webcrypto.subtle.importKey("spki", createPublicKey(privateKey).export({ type: "spki", format: "der" }), algorithm, true, ["verify"]);
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    name: `CN=${name}`,
    notBefore: new Date(Date.now() - 3600_000),
    notAfter: new Date(Date.now() + 365 * 86400_000),
    keys: { privateKey: cryptoKey, publicKey } as never,
    signingAlgorithm: { name: "ECDSA", hash: "SHA-256" },
    extensions: [new x509.BasicConstraintsExtension(true, undefined, true), new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      // swtpm_localca names its issuer's key identifier in every EK certificate
      await x509.SubjectKeyIdentifierExtension.create(publicKey as never)],
  });
  return { name, certificatePem: cert.toString("pem"), keyPem };
}

export interface SoftwareTpm {
  /** TPM2TOOLS_TCTI for tpm2-tools (and the agent) */
  tcti: string;
  /** the EK certificate (PEM) swtpm_setup stored in the TPM's NV */
  ekCertificatePem: string;
  stop(): Promise<void>;
}

/** A free loopback port whose successor is free too: the swtpm TCTI finds the control channel at port + 1. */
async function freePortPair(): Promise<number> {
  for (;;) {
    const port = await freePort();
    if (port >= 65535) continue;
    const free = await new Promise<boolean>((resolve) => {
      const server = net.createServer();
      server.once("error", () => resolve(false));
      server.listen(port + 1, "127.0.0.1", () => server.close(() => resolve(true)));
    });
    if (free) return port;
  }
}

/** A manufactured swtpm whose EK certificate `ca` signed, listening on a loopback port. */
export async function startSoftwareTpm(ca: TestCa): Promise<SoftwareTpm> {
  fs.mkdirSync(WORK, { recursive: true });
  const dir = fs.mkdtempSync(path.join(WORK, "swtpm-"));
  const state = path.join(dir, "state");
  fs.mkdirSync(state);
  fs.writeFileSync(path.join(dir, "signkey.pem"), ca.keyPem, { mode: 0o600 });
  fs.writeFileSync(path.join(dir, "issuercert.pem"), ca.certificatePem);
  fs.writeFileSync(path.join(dir, "certserial"), "1");
  fs.writeFileSync(path.join(dir, "localca.conf"), ["statedir", "signingkey", "issuercert", "certserial"]
    .map((k, i) => `${k} = ${[dir, path.join(dir, "signkey.pem"), path.join(dir, "issuercert.pem"), path.join(dir, "certserial")][i]}`).join("\n") + "\n");
  fs.writeFileSync(path.join(dir, "localca.options"), "--platform-manufacturer Fleet-Tests\n--platform-version 1.0\n--platform-model swtpm\n");
  fs.writeFileSync(path.join(dir, "setup.conf"), [
    "create_certs_tool = /usr/bin/swtpm_localca",
    `create_certs_tool_config = ${path.join(dir, "localca.conf")}`,
    `create_certs_tool_options = ${path.join(dir, "localca.options")}`,
  ].join("\n") + "\n");
  await runFile("swtpm_setup", ["--tpm2", "--tpmstate", state, "--create-ek-cert", "--config", path.join(dir, "setup.conf"), "--overwrite"], { timeout: 60_000 });
  const port = await freePortPair();
  const ctrl = port + 1;
  const child: ChildProcess = spawn("swtpm", [
    "socket", "--tpm2", "--tpmstate", `dir=${state}`,
    "--server", `type=tcp,port=${port},bindaddr=127.0.0.1`, "--ctrl", `type=tcp,port=${ctrl},bindaddr=127.0.0.1`,
    "--flags", "not-need-init,startup-clear",
  ], { stdio: ["ignore", "ignore", "pipe"] });
  const tcti = `swtpm:host=127.0.0.1,port=${port}`;
  const env = { ...process.env, TPM2TOOLS_TCTI: tcti };
  // ready once it answers; then read the EK certificate it was manufactured with
  let ekDer: Buffer | null = null;
  for (let attempt = 0; attempt < 100 && !ekDer; attempt++) {
    try {
      await runFile("tpm2_nvread", ["-C", "o", "-o", path.join(dir, "ek.der"), "0x01c00002"], { env, timeout: 10_000 });
      ekDer = fs.readFileSync(path.join(dir, "ek.der"));
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  if (!ekDer) throw new Error("swtpm did not answer on its loopback port");
  const ek = new x509.X509Certificate(ekDer.subarray(0, 4 + ekDer.readUInt16BE(2)));
  return {
    tcti,
    ekCertificatePem: ek.toString("pem"),
    async stop() {
      child.kill("SIGTERM");
      await new Promise((r) => child.once("exit", r));
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
