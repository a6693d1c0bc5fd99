// A component package given as an https:// archive (src/modules/agent/archive-package.ts),
// as a device asks for it: the service (as `npm start` runs it, trusting the test's CA through
// NODE_EXTRA_CA_CERTS) fetches the .tar.gz from an HTTPS server on loopback through its outbound
// policy, checks the manifest's digest, and answers the compose file inside with its sha256.
// The applications come from a Git registry, as an operator's would.
import { execFile } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import fs from "node:fs";
import https from "node:https";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { composeFromArchive, fetchArchive, tarFiles } from "../../../src/modules/agent/archive-package.js";
import { OutboundRefused } from "../../../src/lib/outbound.js";
import type { Services } from "../../../src/services.js";
import { startGitServer, type GitServer } from "../../support/git-server/index.js";
import { eventually, spawnService, type ServerProcess } from "../../support/server-process.js";
import { makeCa, x509 } from "../pki/support.js";
import { generateKeys, subtle } from "../../unit/pki/fixtures.js";
import { createEnrollmentToken, enroll, ensureCa, type EnrolledDevice } from "./fleet-support.js";

const runFile = promisify(execFile);
const KEY = "fm_" + "H".repeat(40);
const COMPOSE = 'services:\n  web:\n    image: 127.0.0.1:5999/demo/bb:1\n    environment:\n      GREETING: "${GREETING}"\n';

/** A .tar.gz made by tar itself, as an operator makes one: `tar czf out -C dir .` */
async function tarGz(work: string, name: string, files: Record<string, string>): Promise<Buffer> {
  const dir = path.join(work, name);
  for (const [file, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    fs.writeFileSync(path.join(dir, file), text);
  }
  const out = path.join(work, `${name}.tar.gz`);
  await runFile("tar", ["czf", out, "-C", dir, "."]);
  return fs.readFileSync(out);
}

const sha256 = (data: Buffer) => `sha256:${createHash("sha256").update(data).digest("hex")}`;

/** A server certificate for 127.0.0.1 issued by a CA of the test's own. */
async function serverCertificate() {
  const ca = await makeCa({ subject: "CN=Archive Test CA" });
  const keys = await generateKeys("ECDSA-P256");
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: "5" + randomBytes(8).toString("hex").slice(1),
    subject: "CN=127.0.0.1", issuer: ca.cert.subjectName,
    notBefore: new Date(Date.now() - 86_400_000), notAfter: new Date(Date.now() + 86_400_000),
    publicKey: keys.publicKey, signingKey: ca.keys.privateKey, signingAlgorithm: { name: "ECDSA", hash: "SHA-256" },
    extensions: [
      new x509.SubjectAlternativeNameExtension([{ type: "ip", value: "127.0.0.1" }]),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
    ],
  });
  const key = x509.PemConverter.encode(await subtle.exportKey("pkcs8", keys.privateKey), "PRIVATE KEY");
  return { caPem: ca.certificatePem, certPem: cert.toString("pem"), keyPem: key };
}

describe("https:// archive packages", { timeout: 180_000 }, () => {
  let work: string;
  let files: https.Server;
  let filesUrl: string;
  let git: GitServer;
  let service: ServerProcess;
  let device: EnrolledDevice;
  let good: Buffer;
  const served = new Map<string, Buffer>();
  const requests: string[] = [];
  const deploymentOf: Record<string, string> = {};
  let deployments = 0;
  let deploy: (version: string) => Promise<string>;

  beforeAll(async () => {
    work = fs.mkdtempSync(path.join(os.tmpdir(), "archive-package-"));
    const tls = await serverCertificate();
    const caFile = path.join(work, "ca.pem");
    fs.writeFileSync(caFile, tls.caPem);
    // the compose file in a folder of its own (tar czf app.tar.gz app/), beside a file the agent does not use
    good = await tarGz(work, "good", { "web-demo/compose.yaml": COMPOSE, "web-demo/README": "read me\n" });
    served.set("/web-demo-1.0.0.tar.gz", good);
    served.set("/moved.tar.gz", good);
    served.set("/no-compose.tar.gz", await tarGz(work, "none", { "app/settings.yaml": "a: 1\n" }));
    served.set("/plain.txt", Buffer.from("services: {}\n"));
    files = https.createServer({ key: tls.keyPem, cert: tls.certPem }, (req, res) => {
      requests.push(req.url ?? "");
      if (req.url === "/old-name.tar.gz") return void res.writeHead(302, { location: "/moved.tar.gz" }).end();
      const body = served.get(req.url ?? "");
      if (!body) return void res.writeHead(404).end("not here");
      res.writeHead(200, { "content-type": "application/gzip", "content-length": body.length }).end(body);
    });
    await new Promise<void>((resolve) => files.listen(0, "127.0.0.1", resolve));
    filesUrl = `https://127.0.0.1:${(files.address() as AddressInfo).port}`;

    const component = (file: string, digest?: string) => ({ name: "web", properties: { repository: `${filesUrl}${file}`, revision: "1", ...(digest ? { digest } : {}) } });
    const versions: Record<string, ReturnType<typeof component>> = {
      "1.0.0": component("/web-demo-1.0.0.tar.gz", sha256(good)),
      "1.1.0": component("/old-name.tar.gz"),
      "2.0.0": component("/web-demo-1.0.0.tar.gz", `sha256:${"0".repeat(64)}`),
      "3.0.0": component("/no-compose.tar.gz"),
      "4.0.0": component("/plain.txt"),
      "5.0.0": component("/gone.tar.gz"),
    };
    git = await startGitServer();
    const repo = await git.createRepo("archives", Object.fromEntries(Object.entries(versions).map(([version, c]) => [`apps/${version}/app.yaml`, stringify({
      apiVersion: "fleet.app/v1alpha1", kind: "ApplicationManifest", metadata: { id: "web-demo", name: "Web demo", version },
      deploymentProfiles: [{ id: "compose", type: "compose", components: [c] }],
      parameters: { greeting: { value: "hello", targets: [{ pointer: "GREETING", components: ["web"] }] } },
    })])));

    service = await spawnService("archive-package", { BOOTSTRAP_API_KEY: KEY, NODE_EXTRA_CA_CERTS: caFile }, { defaultKey: KEY, database: "migrated" });
    const call = async (method: string, p: string, body?: unknown) => {
      const res = await service.api(method, p, { body });
      if (res.status >= 300) throw new Error(`${method} ${p} answered ${res.status}: ${res.text}`);
      return res.body;
    };
    await ensureCa(service, KEY);
    device = await enroll(service, (await createEnrollmentToken(service, KEY)).token);
    const registry = await call("POST", "/api/v1/registries/git", { name: "archives", url: repo.url, syncIntervalMinutes: 0 });
    const sync = await call("POST", `/api/v1/registries/git/${registry.id}/sync`);
    expect(sync.applicationsImported, JSON.stringify(sync)).toBe(Object.keys(versions).length);
    const app = (await call("GET", "/api/v1/applications?limit=50")).items.find((a: { name: string }) => a.name === "Web demo");
    // one deployment of an application per device is installed at a time: each test deploys its version
    deploy = async (version) => {
      const created = await call("POST", "/api/v1/deployments", {
        name: `web-${version}-${++deployments}`, applicationId: app.id, version, profileId: "compose", parameters: { greeting: "bonjour" }, target: { deviceIds: [device.deviceId] },
      });
      await call("POST", `/api/v1/deployments/${created.id}/start`);
      return (deploymentOf[version] = created.id);
    };
  }, 180_000);
  afterAll(async () => {
    await service?.stop();
    await git?.close();
    await new Promise((resolve) => files?.close(resolve));
    fs.rmSync(work, { recursive: true, force: true });
  });

  /** the package route as the device asks it, once the deployment is the device's to install (a heartbeat gives it) */
  const packageOf = async (version: string) => {
    const id = await deploy(version);
    return eventually(async () => {
      await service.api("POST", "/api/v1/agent/heartbeat", { key: null, token: await device.token(), body: {} });
      const res = await service.api("GET", `/api/v1/agent/deployments/${id}/components/web`, { key: null, token: await device.token() });
      return res.status === 404 && /Deployment/.test(res.text) ? undefined : res;
    }, 30_000, `the package of ${version}`);
  };

  it("serves the compose file of the archive whose digest the manifest gives, with its sha256; the version's parameters are the agent's to render", async () => {
    const res = await packageOf("1.0.0");
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({
      component: "web", repository: `${filesUrl}/web-demo-1.0.0.tar.gz`, revision: "1",
      manifestDigest: sha256(good), digest: sha256(Buffer.from(COMPOSE)), mediaType: "application/vnd.fleet.compose.v1+yaml", content: COMPOSE, pullGrant: null,
    });
    // the deployment's parameters reach the agent with the desired state, as for oci:// packages
    const state = await service.api("POST", "/api/v1/agent/heartbeat", { key: null, token: await device.token(), body: {} });
    expect(state.status, state.text).toBe(200);
    const desired = state.body.deployments.find((d: { deploymentId: string }) => d.deploymentId === deploymentOf["1.0.0"]);
    expect(desired.parameters).toEqual({ web: { GREETING: "bonjour" } });
  });

  it("follows a redirect; without a digest in the manifest, the archive is taken as served", async () => {
    const res = await packageOf("1.1.0");
    expect(res.status, res.text).toBe(200);
    expect(res.body.content).toBe(COMPOSE);
    expect(requests).toContain("/moved.tar.gz");
  });

  it("refuses an archive that does not match the manifest's digest (422 naming both digests)", async () => {
    const res = await packageOf("2.0.0");
    expect(res.status).toBe(422);
    expect(res.body.message).toBe(
      `component "web": the package ${filesUrl}/web-demo-1.0.0.tar.gz: the archive does not match the manifest's digest: the manifest says sha256:${"0".repeat(64)}, ${filesUrl}/web-demo-1.0.0.tar.gz served ${sha256(good)}`,
    );
  });

  it("refuses an archive without a compose file, and a file that is no .tar.gz (422); a missing one is 404", async () => {
    const none = await packageOf("3.0.0");
    expect(none.status).toBe(422);
    expect(none.body.message).toMatch(/holds no compose file \(compose\.yaml, compose\.yml, docker-compose\.yaml, docker-compose\.yml\) at its top$/);
    const plain = await packageOf("4.0.0");
    expect(plain.status).toBe(422);
    expect(plain.body.message).toMatch(/it is not a gzip-compressed tar archive \(\.tar\.gz\)$/);
    const gone = await packageOf("5.0.0");
    expect(gone.status).toBe(404);
    expect(gone.body.message).toContain(`${filesUrl}/gone.tar.gz`);
  });

  it("gives the package to no device the deployment does not target (404)", async () => {
    expect((await packageOf("1.0.0")).status).toBe(200);
    const other = await enroll(service, (await createEnrollmentToken(service, KEY)).token);
    const res = await service.api("GET", `/api/v1/agent/deployments/${deploymentOf["1.0.0"]}/components/web`, { key: null, token: await other.token() });
    expect(res.status).toBe(404);
    expect(res.text).not.toContain("services:");
  });

  it("fetches through the outbound address policy: with private networks refused, the loopback server is not asked", async () => {
    const before = requests.length;
    const strict = { config: { OUTBOUND_ALLOW_PRIVATE_NETWORKS: false } } as unknown as Services;
    await expect(fetchArchive(strict, `${filesUrl}/web-demo-1.0.0.tar.gz`, undefined, AbortSignal.timeout(10_000))).rejects.toBeInstanceOf(OutboundRefused);
    expect(requests.length).toBe(before);
  });

  it("reads the long names of GNU tar and pax, and a compose file at the archive's top", async () => {
    const deep = `${"d".repeat(60)}/${"e".repeat(60)}`;
    const archive = await tarGz(work, "long", { [`${deep}/notes.txt`]: "x\n", "docker-compose.yml": COMPOSE });
    expect(composeFromArchive(archive)).toEqual({ name: "docker-compose.yml", content: Buffer.from(COMPOSE) });
    const { gunzipSync } = await import("node:zlib");
    expect([...tarFiles(gunzipSync(archive)).keys()].sort()).toEqual([`${deep}/notes.txt`, "docker-compose.yml"]);
    const pax = path.join(work, "pax.tar.gz");
    await runFile("tar", ["czf", pax, "--format=pax", "-C", path.join(work, "long"), "."]);
    expect([...tarFiles(gunzipSync(fs.readFileSync(pax))).keys()].sort()).toEqual([`${deep}/notes.txt`, "docker-compose.yml"]);
  });
});
