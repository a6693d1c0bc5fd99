// A real OCI registry for the tests: Debian's docker-registry (the CNCF distribution server)
// on 127.0.0.1 with a random port and a temporary storage directory, optionally behind
// htpasswd (BASIC) authentication or behind a Docker token service (Bearer realm) run here. Content is pushed through the registry HTTP API.
// Tests that start one skip without the peers: describe.skipIf(!peersAvailable("docker-registry"))
// ("htpasswd" too for the BASIC variant; test/support/peers.ts).
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { createHash, randomUUID, webcrypto } from "node:crypto";
import http from "node:http";
import { connect as tlsConnect } from "node:tls";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import "reflect-metadata";
import * as x509 from "@peculiar/x509";
import { SignJWT } from "jose";
import { requirePeer } from "./peers.js";
import { applyConnectionTimeouts } from "../../src/lib/http-timeouts.js";

const run = promisify(execFile);

export interface OciRegistryServer {
  url: string;
  /** the Authorization header value the tests push with (BASIC variant), else undefined */
  authorization?: string;
  /** token variant: every request the token service received */
  tokenRequests?: Array<{ scope: string | null; service: string | null; authorized: boolean }>;
  /** uploads a blob (POST then PUT with the digest) and returns its descriptor */
  pushBlob(repository: string, data: Buffer | string, mediaType: string): Promise<{ mediaType: string; digest: string; size: number }>;
  /** PUTs a manifest under a tag and returns its digest */
  pushManifest(repository: string, reference: string, manifest: object, mediaType?: string): Promise<string>;
  /** an application package: artifactType + a description layer holding the YAML */
  pushPackage(repository: string, tag: string, yaml: string, artifactType?: string): Promise<string>;
  /** a plain container image (config + one tar layer), no artifactType */
  pushImage(repository: string, tag: string): Promise<string>;
  close(): Promise<void>;
}

const OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json";

function pusher(url: string, authFor: (repository: string) => Promise<string | undefined>) {
  let authorization: string | undefined;
  const headers = (extra: Record<string, string> = {}) => ({ ...(authorization ? { authorization } : {}), ...extra });
  const pushBlob: OciRegistryServer["pushBlob"] = async (repository, data, mediaType) => {
    authorization = await authFor(repository);
    const body = Buffer.from(data);
    const digest = sha256(body);
    const start = await fetch(`${url}/v2/${repository}/blobs/uploads/`, { method: "POST", headers: headers() });
    if (start.status !== 202) throw new Error(`blob upload start: ${start.status} ${await start.text()}`);
    const location = new URL(start.headers.get("location")!, url);
    location.searchParams.set("digest", digest);
    const put = await fetch(location, { method: "PUT", headers: headers({ "content-type": "application/octet-stream" }), body });
    if (put.status !== 201) throw new Error(`blob upload: ${put.status} ${await put.text()}`);
    return { mediaType, digest, size: body.length };
  };
  const pushManifest: OciRegistryServer["pushManifest"] = async (repository, reference, manifest, mediaType = OCI_MANIFEST) => {
    authorization = await authFor(repository);
    const body = JSON.stringify(manifest);
    const res = await fetch(`${url}/v2/${repository}/manifests/${reference}`, { method: "PUT", headers: headers({ "content-type": mediaType }), body });
    if (res.status !== 201) throw new Error(`manifest PUT: ${res.status} ${await res.text()}`);
    return sha256(body);
  };
  const pushPackage: OciRegistryServer["pushPackage"] = async (repository, tag, yaml, artifactType = "application/vnd.margo.app.v1+json") => {
    const config = await pushBlob(repository, "{}", "application/vnd.oci.empty.v1+json");
    const layer = await pushBlob(repository, yaml, "application/vnd.margo.app.description.v1+yaml");
    return pushManifest(repository, tag, {
      schemaVersion: 2, mediaType: OCI_MANIFEST, artifactType, config,
      layers: [{ ...layer, annotations: { "org.opencontainers.image.title": "margo.yaml" } }],
    });
  };
  const pushImage: OciRegistryServer["pushImage"] = async (repository, tag) => {
    const config = await pushBlob(repository, JSON.stringify({ architecture: "amd64", os: "linux", rootfs: { type: "layers", diff_ids: [] } }), "application/vnd.oci.image.config.v1+json");
    const layer = await pushBlob(repository, Buffer.alloc(1024), "application/vnd.oci.image.layer.v1.tar");
    return pushManifest(repository, tag, { schemaVersion: 2, mediaType: OCI_MANIFEST, config, layers: [layer] });
  };
  return { pushBlob, pushManifest, pushPackage, pushImage };
}

/** Pushes into the registry at `url` (blobs, manifests, application packages, images) with one Authorization header or none; scripts/sample-compose.ts packages with it. */
export const registryPusher = (url: string, authorization?: string) => pusher(url, async () => authorization);

/** A TCP port free on 127.0.0.1 right now. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

async function waitForV2(url: string, child: ChildProcess, output: () => string, tls = false) {
  const deadline = Date.now() + 15_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`docker-registry exited (${child.exitCode}): ${output()}`);
    try {
      if (tls) {
        // The self-signed certificate is not trusted by fetch: a TLS handshake is enough.
        const ok = await new Promise<boolean>((resolve) => {
          const socket = tlsConnect({ host: "127.0.0.1", port: Number(new URL(url).port), rejectUnauthorized: false }, () => {
            socket.end();
            resolve(true);
          });
          socket.once("error", () => resolve(false));
        });
        if (ok) return;
      } else {
        const res = await fetch(`${url}/v2/`);
        if (res.status === 200 || res.status === 401) return;
      }
    } catch {
      /* not listening yet */
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`docker-registry did not start: ${output()}`);
}

/**
 * The Docker token service of the token variant: checks the Basic credential, answers an ES256
 * JWT (x5c: a self-signed certificate that the registry trusts) granting the requested scope.
 */
async function startTokenService(dir: string, credential: { username: string; password: string }) {
  x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);
  const alg = { name: "ECDSA", namedCurve: "P-256", hash: "SHA-256" };
  const keys = (await webcrypto.subtle.generateKey(alg, true, ["sign", "verify"])) as webcrypto.CryptoKeyPair;
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: "01", name: "CN=test-token-issuer", notBefore: new Date(Date.now() - 3_600_000), notAfter: new Date(Date.now() + 86_400_000), keys, signingAlgorithm: alg,
  });
  await writeFile(path.join(dir, "token-root.pem"), cert.toString("pem"));
  const x5c = Buffer.from(cert.rawData).toString("base64");
  const requests: Array<{ scope: string | null; service: string | null; authorized: boolean }> = [];
  const issue = async (scope: string | null) => {
    const access = scope ? [{ type: "repository", name: scope.split(":")[1], actions: scope.split(":")[2]!.split(",") }] : [];
    const now = Math.floor(Date.now() / 1000);
    return new SignJWT({ access }).setProtectedHeader({ alg: "ES256", x5c: [x5c] })
      .setIssuer("test-token-issuer").setSubject(credential.username).setAudience("test-registry")
      .setIssuedAt(now).setNotBefore(now - 10).setExpirationTime(now + 300).setJti(randomUUID()).sign(keys.privateKey);
  };
  const expected = `Basic ${Buffer.from(`${credential.username}:${credential.password}`).toString("base64")}`;
  const server = http.createServer((req, res) => {
    const url = new URL(req.url!, "http://token");
    const authorized = req.headers.authorization === expected;
    requests.push({ scope: url.searchParams.get("scope"), service: url.searchParams.get("service"), authorized });
    if (!authorized) return void res.writeHead(401, { "content-type": "application/json" }).end('{"details":"bad credential"}');
    void issue(url.searchParams.get("scope")).then((token) => res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ token })));
  });
  applyConnectionTimeouts(server); // as the service sets them: the service, its client, closes idle sockets first
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const realm = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}/token`;
  return { server, requests, issue, realm };
}

/** A self-signed certificate for 127.0.0.1 (the TLS variant), written as PEM files into dir. */
async function writeSelfSignedTls(dir: string) {
  x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);
  const alg = { name: "ECDSA", namedCurve: "P-256", hash: "SHA-256" };
  const keys = (await webcrypto.subtle.generateKey(alg, true, ["sign", "verify"])) as webcrypto.CryptoKeyPair;
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: "02", name: "CN=127.0.0.1", notBefore: new Date(Date.now() - 3_600_000), notAfter: new Date(Date.now() + 86_400_000), keys, signingAlgorithm: alg,
    extensions: [new x509.SubjectAlternativeNameExtension([{ type: "ip", value: "127.0.0.1" }])],
  });
  const pkcs8 = Buffer.from(await webcrypto.subtle.exportKey("pkcs8", keys.privateKey)).toString("base64").replace(/(.{64})/g, "$1\n");
  await writeFile(path.join(dir, "tls.crt"), cert.toString("pem"));
  await writeFile(path.join(dir, "tls.key"), `-----BEGIN PRIVATE KEY-----\n${pkcs8}\n-----END PRIVATE KEY-----\n`);
}

export async function startOciRegistry(options: { basic?: { username: string; password: string }; token?: { username: string; password: string }; tls?: boolean } = {}): Promise<OciRegistryServer> {
  const registryProgram = requirePeer("docker-registry");
  const htpasswdEntry = options.basic ? (await run(requirePeer("htpasswd"), ["-Bbn", options.basic.username, options.basic.password])).stdout.trim() : null;
  const dir = await mkdtemp(path.join(os.tmpdir(), "oci-registry-"));
  let auth = "";
  if (options.tls) await writeSelfSignedTls(dir);
  const tokens = options.token ? await startTokenService(dir, options.token) : null;
  if (tokens) {
    auth = `auth:\n  token:\n    realm: ${tokens.realm}\n    service: test-registry\n    issuer: test-token-issuer\n    rootcertbundle: ${path.join(dir, "token-root.pem")}\n`;
  }
  if (htpasswdEntry !== null) {
    await writeFile(path.join(dir, "htpasswd"), htpasswdEntry + "\n");
    auth = `auth:\n  htpasswd:\n    realm: test-registry\n    path: ${path.join(dir, "htpasswd")}\n`;
  }
  for (let attempt = 0; ; attempt++) {
    const port = await freePort();
    const config = [
      "version: 0.1",
      "log:\n  level: error\n  accesslog:\n    disabled: true",
      `storage:\n  filesystem:\n    rootdirectory: ${path.join(dir, "data")}\n  delete:\n    enabled: true`,
      `http:\n  addr: 127.0.0.1:${port}\n  secret: test-secret` +
        (options.tls ? `\n  tls:\n    certificate: ${path.join(dir, "tls.crt")}\n    key: ${path.join(dir, "tls.key")}` : ""),
      auth,
    ].join("\n");
    await writeFile(path.join(dir, "config.yml"), config);
    const child = spawn(registryProgram, ["serve", path.join(dir, "config.yml")], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout!.on("data", (c) => (out += c));
    child.stderr!.on("data", (c) => (out += c));
    const url = `${options.tls ? "https" : "http"}://127.0.0.1:${port}`;
    try {
      await waitForV2(url, child, () => out, Boolean(options.tls));
    } catch (err) {
      child.kill("SIGKILL");
      if (attempt < 3 && /address already in use/.test(out)) continue;
      await rm(dir, { recursive: true, force: true });
      throw err;
    }
    const authorization = options.basic ? `Basic ${Buffer.from(`${options.basic.username}:${options.basic.password}`).toString("base64")}` : undefined;
    return {
      url,
      ...pusher(url, async (repository) => (tokens ? `Bearer ${await tokens.issue(`repository:${repository}:pull,push`)}` : authorization)),
      ...(options.basic ? { authorization: `Basic ${Buffer.from(`${options.basic.username}:${options.basic.password}`).toString("base64")}` } : {}),
      ...(tokens ? { tokenRequests: tokens.requests } : {}),
      close: async () => {
        tokens?.server.close();
        if (child.exitCode === null) {
          const exited = new Promise((r) => child.once("exit", r));
          child.kill("SIGTERM");
          await Promise.race([exited, new Promise((r) => setTimeout(r, 3000))]);
          if (child.exitCode === null) child.kill("SIGKILL");
        }
        await rm(dir, { recursive: true, force: true });
      },
    };
  }
}

export const sha256 = (data: Buffer | string) => `sha256:${createHash("sha256").update(data).digest("hex")}`;
