// `npm run samples:compose -- [--registry http://127.0.0.1:5000] [--version 1.0.0] [--url http://localhost:3000 --key fm_...]`:
// a compose application of your own for a real device (the README's "Run a real device"),
// without the internet. Pushes three things into the OCI registry at --registry over its HTTP
// API (no push tool needed):
//   * a container image <registry>/samples/busybox:1 made from this machine's static busybox
//     (Debian's busybox-static): one layer with /bin/busybox and its applets;
//   * the compose package <registry>/samples/hello-web-compose:<version>: a busybox httpd whose
//     page says the deployment's `greeting`, published on the host port `port` (docs/agent.md,
//     "The compose package");
//   * the application package <registry>/samples/hello-web:<version>: the manifest naming that
//     compose package (docs/manifest.md, "In an OCI registry").
// Prints the registry and repository to add (console: Registries -> OCI). With --key (an API key
// with registries:read and registries:write) it adds the registry to the key's organization of
// the service at --url (or finds the one it added before) and syncs it: the catalog then holds
// hello-web <version>.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { gzipSync } from "node:zlib";
import semver from "semver";
import { stringify } from "yaml";
import { serviceArch } from "../agent/src/host/facts.js";
import { onPath } from "../test/support/peers.js";
import { registryPusher } from "../test/support/oci-registry.js";
import { apiCaller, type ApiCall } from "./sample-apps.js";

const USAGE = "usage: npm run samples:compose -- [--registry http://127.0.0.1:5000] [--version 1.0.0] [--busybox PATH] [--url http://localhost:3000 --key fm_...]";

export const SAMPLE_COMPOSE_APP = "hello-web";
export const SAMPLE_COMPOSE_REGISTRY_NAME = "sample compose apps";
const APP_REPOSITORY = `samples/${SAMPLE_COMPOSE_APP}`;
const COMPOSE_REPOSITORY = `samples/${SAMPLE_COMPOSE_APP}-compose`;
const IMAGE_REPOSITORY = "samples/busybox";
const OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json";
/** the busybox applets the image links (sh runs the command, httpd serves the page, kill and trap stop it) */
const APPLETS = ["sh", "echo", "mkdir", "cat", "httpd", "kill", "sleep", "wget", "ls"];

function options() {
  const { values } = parseArgs({
    args: process.argv.slice(2),
    options: {
      registry: { type: "string", default: "http://127.0.0.1:5000" },
      version: { type: "string", default: "1.0.0" },
      busybox: { type: "string" },
      url: { type: "string" },
      key: { type: "string" },
      help: { type: "boolean", default: false },
    },
    strict: true,
  });
  if (values.help) throw new Error(USAGE);
  const registry = /^https?:\/\//.test(values.registry) ? values.registry : `http://${values.registry}`;
  if (!/^https?:\/\/[^/]+\/?$/.test(registry)) throw new Error("--registry: the registry's address, e.g. http://127.0.0.1:5000");
  if (semver.valid(values.version) !== values.version) throw new Error("--version: a SemVer version such as 1.0.0");
  if (values.url && !/^https?:\/\/[^/]+\/?$/.test(values.url)) throw new Error("--url: the service's address, e.g. http://localhost:3000");
  return {
    registry: registry.replace(/\/$/, ""),
    version: values.version,
    busybox: values.busybox ?? onPath("busybox"),
    url: (values.url ?? "http://localhost:3000").replace(/\/$/, ""),
    key: values.key,
  };
}

/** Whether an ELF executable needs no dynamic loader (no PT_INTERP program header): it runs in an image with nothing else in it. */
function isStaticExecutable(file: Buffer): boolean {
  if (file.length < 64 || file.readUInt32BE(0) !== 0x7f454c46) return false;
  const is64 = file[4] === 2;
  const little = file[5] === 1;
  const u16 = (at: number) => (little ? file.readUInt16LE(at) : file.readUInt16BE(at));
  const u32 = (at: number) => (little ? file.readUInt32LE(at) : file.readUInt32BE(at));
  const phoff = is64 ? Number(little ? file.readBigUInt64LE(0x20) : file.readBigUInt64BE(0x20)) : u32(0x1c);
  const [entrySize, count] = is64 ? [u16(0x36), u16(0x38)] : [u16(0x2a), u16(0x2c)];
  for (let i = 0; i < count; i++) {
    if (u32(phoff + i * entrySize) === 3) return false; // PT_INTERP
  }
  return true;
}

/** The image's one layer: /bin/busybox, its applets as links and /tmp, as a reproducible tar (GNU tar). */
function busyboxLayer(busybox: string): Buffer {
  const root = mkdtempSync(path.join(os.tmpdir(), "sample-compose-rootfs-"));
  try {
    mkdirSync(path.join(root, "bin"));
    mkdirSync(path.join(root, "tmp"), { mode: 0o1777 });
    copyFileSync(busybox, path.join(root, "bin", "busybox"));
    for (const applet of APPLETS) symlinkSync("busybox", path.join(root, "bin", applet));
    return execFileSync("tar", ["--create", "--file=-", "--sort=name", "--owner=0", "--group=0", "--numeric-owner", "--mtime=@0", "-C", root, "."], { maxBuffer: 64 * 1024 * 1024 });
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

/** The compose file of a version: busybox httpd on port 8080 of the container, published on ${HTTP_PORT} of the host. */
function composeFile(image: string, version: string): string {
  // httpd in the background and a TERM trap: a shell as PID 1 ignores SIGTERM and every `down`
  // would wait out the engine's stop timeout. `$$` is a literal `$` to compose.
  const script = `mkdir -p /tmp/www && echo "${SAMPLE_COMPOSE_APP} ${version} says $$GREETING" > /tmp/www/index.html && echo "serving ${SAMPLE_COMPOSE_APP} ${version} on port 8080"; ` +
    `httpd -f -p 8080 -h /tmp/www & trap "kill $$!; exit 0" TERM; wait`;
  return stringify({ services: { web: { image, command: ["/bin/sh", "-c", script], ports: ["${HTTP_PORT}:8080"] } } });
}

/** The application manifest (docs/manifest.md) of a version, naming the compose package. */
function appManifest(registryHost: string, version: string): string {
  return stringify({
    apiVersion: "fleet.app/v1alpha1",
    kind: "ApplicationManifest",
    metadata: {
      id: SAMPLE_COMPOSE_APP,
      name: "Hello Web",
      version,
      description: "A busybox httpd page that says the deployment's greeting (npm run samples:compose)",
      catalog: { category: "samples", tags: ["sample", "compose"], organization: [{ name: "Fleet Manager samples" }] },
    },
    deploymentProfiles: [{
      id: "compose",
      type: "compose",
      description: "Podman or Docker hosts",
      components: [{ name: "web", properties: { repository: `oci://${registryHost}/${COMPOSE_REPOSITORY}`, revision: version, wait: true, timeout: "2m0s" } }],
      requiredResources: { cpu: { cores: 0.1, architectures: [serviceArch(os.arch())] }, memory: "16Mi" },
    }],
    parameters: {
      greeting: { value: "hello", description: "what the page says", schema: { type: "string", maxLength: 100 }, targets: [{ pointer: "GREETING", components: ["web"] }] },
      port: { value: 8080, description: "the host port the page answers on", schema: { type: "integer", minimum: 1024, maximum: 65535 }, targets: [{ pointer: "HTTP_PORT", components: ["web"] }] },
    },
  });
}

const sha256 = (data: Buffer | string) => `sha256:${createHash("sha256").update(data).digest("hex")}`;

/** Pushes the image, the compose package and the application package of `version`; answers their references. */
async function pushSample(registry: string, version: string, busybox: string) {
  const host = new URL(registry).host;
  const push = registryPusher(registry);
  const empty = (repository: string) => push.pushBlob(repository, "{}", "application/vnd.oci.empty.v1+json");

  const tar = busyboxLayer(busybox);
  const layer = await push.pushBlob(IMAGE_REPOSITORY, gzipSync(tar), "application/vnd.oci.image.layer.v1.tar+gzip");
  const config = await push.pushBlob(IMAGE_REPOSITORY, JSON.stringify({
    architecture: serviceArch(os.arch()), os: "linux", config: { Cmd: ["/bin/sh"] },
    rootfs: { type: "layers", diff_ids: [sha256(tar)] },
  }), "application/vnd.oci.image.config.v1+json");
  await push.pushManifest(IMAGE_REPOSITORY, "1", { schemaVersion: 2, mediaType: OCI_MANIFEST, config, layers: [layer] });
  const image = `${host}/${IMAGE_REPOSITORY}:1`;

  const composeLayer = await push.pushBlob(COMPOSE_REPOSITORY, composeFile(image, version), "application/vnd.fleet.compose.v1+yaml");
  await push.pushManifest(COMPOSE_REPOSITORY, version, {
    schemaVersion: 2, mediaType: OCI_MANIFEST, artifactType: "application/vnd.fleet.compose.v1", config: await empty(COMPOSE_REPOSITORY),
    layers: [{ ...composeLayer, annotations: { "org.opencontainers.image.title": "compose.yaml" } }],
  });
  await push.pushPackage(APP_REPOSITORY, version, appManifest(host, version), "application/vnd.fleet.app.v1+json");
  return { image, compose: `${host}/${COMPOSE_REPOSITORY}:${version}`, application: `${host}/${APP_REPOSITORY}:${version}` };
}

interface SyncRecord { status: string; applicationsFound: number; applicationsImported: number; applicationsUpdated: number; errors: string[]; skipped: Array<{ repository: string; tag: string; reason: string }> }

/** Adds the registry to the key's organization (or takes the one of that name added before) and syncs it. */
async function addSampleRegistry(call: ApiCall, key: string, registry: string) {
  const existing = await call("GET", "/api/v1/registries/oci?limit=100", { key });
  const found = (existing.items as Array<{ id: string; name: string; url: string; repositories: string[] }>).find((r) => r.name === SAMPLE_COMPOSE_REGISTRY_NAME);
  const added = found
    ? await call("PATCH", `/api/v1/registries/oci/${found.id}`, { key, body: { url: registry, repositories: [...new Set([...found.repositories, APP_REPOSITORY])] } })
    : await call("POST", "/api/v1/registries/oci", { key, body: { name: SAMPLE_COMPOSE_REGISTRY_NAME, url: registry, repositories: [APP_REPOSITORY] } });
  const synced: SyncRecord = await call("POST", `/api/v1/registries/oci/${added.id}/sync`, { key });
  return { registry: added as { id: string; name: string }, synced, existed: Boolean(found) };
}

async function main() {
  let opts: ReturnType<typeof options>;
  try {
    opts = options();
  } catch (err) {
    console.error((err as Error).message);
    if (!(err as Error).message.startsWith("usage")) console.error(USAGE);
    process.exit(2);
  }
  const say = (line: string) => process.stdout.write(line + "\n");
  if (!opts.busybox) throw new Error("no busybox found: install Debian's busybox-static (apt-get install busybox-static), or give --busybox PATH");
  if (!isStaticExecutable(readFileSync(opts.busybox))) {
    throw new Error(`${opts.busybox} is not a statically linked executable: the image holds nothing else. Install Debian's busybox-static (apt-get install busybox-static), or give --busybox PATH`);
  }
  let pushed: Awaited<ReturnType<typeof pushSample>>;
  try {
    pushed = await pushSample(opts.registry, opts.version, opts.busybox);
  } catch (err) {
    const cause = (err as Error & { cause?: { code?: string } }).cause?.code;
    throw new Error(`could not push to the registry at ${opts.registry}: ${cause === "ECONNREFUSED" ? "nothing answers there (is docker-registry running?)" : (err as Error).message}`);
  }
  say(`pushed the sample compose application '${SAMPLE_COMPOSE_APP}' ${opts.version} to ${opts.registry}:`);
  say(`  image:                ${pushed.image}   (busybox httpd, from ${opts.busybox})`);
  say(`  compose package:      ${pushed.compose}`);
  say(`  application package:  ${pushed.application}`);
  say(`  add it as an OCI registry: URL ${opts.registry}, repository ${APP_REPOSITORY} (console: Registries -> Add OCI registry)`);
  if (!opts.key) {
    say(`  or let this command add it: npm run samples:compose -- --registry ${opts.registry} --url ${opts.url} --key fm_...   (a key with registries:read and registries:write)`);
    return;
  }
  const { registry, synced, existed } = await addSampleRegistry(apiCaller(opts.url), opts.key, opts.registry);
  say(`  ${existed ? "found" : "added"} at ${opts.url} as OCI registry '${registry.name}' (id ${registry.id}) and synced: ` +
    `${synced.applicationsFound} found, ${synced.applicationsImported} imported, ${synced.applicationsUpdated} updated, ${synced.skipped.length} skipped, ${synced.errors.length} errors`);
  for (const skipped of synced.skipped) say(`    skipped ${skipped.repository}:${skipped.tag}: ${skipped.reason}`);
  for (const error of synced.errors) say(`    error: ${error}`);
  if (synced.status !== "success") process.exitCode = 1;
}

await main().catch((err: Error) => {
  console.error(`npm run samples:compose: ${err.message}`);
  process.exit(1);
});
