// npm run e2e:os-update: an OS update with RAUC across a real reboot in a virtual machine
// (issue 53; docs/os-updates.md, "A real reboot in a virtual machine").
//
// Real: the service (in this process, on an embedded PGlite in a temporary directory, on the
// host's loopback), the fleet agent (npm run build:agent) in a Debian bookworm guest reaching it
// through qemu's user network, Debian's RAUC in the guest with its GRUB backend, UEFI firmware
// (OVMF), GRUB with RAUC's boot selection (grub.cfg), the guest's kernel and systemd, and the
// reboots: the agent runs `systemctl reboot`, qemu resets the machine, GRUB picks the slot.
// The operator's side is the REST API: a deployment of an application version whose profile's
// one component is the system image (an https:// bundle on the host's loopback with its digest).
// The one shortcut: the versions are put in the catalog by the import code a registry sync runs
// (as the deployment tests do), not fetched from a git registry.
//
// Case 1: 2.0.0 installed into slot B, booted, health checks pass, marked good: the deployment's
// device runs, the device's system shows B booted with 2.0.0, its history says committed.
// Routine reboots: two reboot actions of the committed system; GRUB boots B both times (the
// agent marks the booted slot good at every boot).
// Case 2: 2.1.0, whose image carries a health check that fails (/etc/fleet-agent/health.d):
// installed into slot A, booted on trial, not healthy within the stated time, marked bad, the
// reboot lands in slot B again: the deployment's device failed with the reason, history rolled-back.
import { execFileSync } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import https from "node:https";
import path from "node:path";
import { loadConfig } from "../../src/config.js";
import { createLogger } from "../../src/lib/logger.js";
import { startService, type RunningService } from "../../src/server.js";
import { parseManifest, manifestDigest } from "../../src/modules/applications/manifest/index.js";
import { ingestManifests } from "../../src/modules/applications/ingest.js";
import { CACHE, dataImage, debianRootfs, espImage, ext4Image, guestTree, makeBundle, makeSigner, markVersion, readGrubenv, slotBytes, type Bundle } from "./image.js";
import { startVm, type Vm } from "./vm.js";

const HERE = path.dirname(new URL(import.meta.url).pathname);
const ROOT = path.resolve(HERE, "../..");
const APT_PACKAGES: Record<string, string> = {
  "qemu-system-x86_64": "qemu-system-x86", "/usr/share/OVMF/OVMF_CODE.fd": "ovmf", "grub-mkstandalone": "grub-common",
  "/usr/lib/grub/x86_64-efi/linux.mod": "grub-efi-amd64-bin", mformat: "mtools", sgdisk: "gdisk", mmdebstrap: "mmdebstrap",
  rauc: "rauc", mksquashfs: "squashfs-tools", "mkfs.ext4": "e2fsprogs", openssl: "openssl",
};
/** the broken 2.1.0's health time: long enough for a slow emulated boot's agent to start and try */
const HEALTH_TIMEOUT = "2m30s";
const started = Date.now();
const elapsed = () => `${((Date.now() - started) / 1000).toFixed(0).padStart(5)} s`;
const say = (line: string) => process.stdout.write(`${elapsed()}  ${line}\n`);

function present(tool: string): boolean {
  if (tool.startsWith("/")) return fs.existsSync(tool);
  try {
    execFileSync("sh", ["-c", `command -v ${tool}`], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

/** Installs what is missing (as .ci/run does for its peers); not root: says what and skips. */
function ensureTools(): boolean {
  const missing = [...new Set(Object.entries(APT_PACKAGES).filter(([tool]) => !present(tool)).map(([, pkg]) => pkg))];
  if (!missing.length) return true;
  if (process.getuid?.() !== 0) {
    console.log(`skipped: ${missing.join(" ")} (apt-get install -y ${missing.join(" ")} as root, then run again)`);
    return false;
  }
  say(`installing ${missing.join(" ")}`);
  execFileSync("apt-get", ["install", "-y", "--no-install-recommends", ...missing], { stdio: "inherit" });
  return true;
}

async function waitFor<T>(what: string, ms: number, probe: () => Promise<T | undefined>, vm?: Vm): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const got = await probe();
    if (got !== undefined) return got;
    if (vm?.exited()) throw new Error(`the virtual machine stopped while waiting for ${what}`);
    if (Date.now() > until) throw new Error(`timed out after ${ms / 1000} s waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 2000));
  }
}

/** healthTimeout: the component's `timeout`, the time the new system has to pass its health checks (agent default 300 s) */
function manifest(version: string, bundleUrl: string, digest: string, healthTimeout?: string): string {
  return `apiVersion: fleet.app/v1alpha1
kind: ApplicationManifest
metadata:
  id: fleet-vm-os
  name: Fleet VM operating system
  version: ${version}
  catalog: { category: system }
deploymentProfiles:
  - id: os
    type: compose
    components:
      - name: os
        properties:
          type: system-image
          repository: ${bundleUrl}
          revision: ${version}
          digest: ${digest}${healthTimeout ? `\n          timeout: ${healthTimeout}` : ""}
parameters: {}
`;
}

/** Serves the bundles over HTTPS on the host's loopback (the guest fetches them at 10.0.2.2), with Range. */
function serveBundles(dir: string, tls: { cert: string; key: string }): Promise<https.Server> {
  const server = https.createServer({ cert: fs.readFileSync(tls.cert), key: fs.readFileSync(tls.key) }, (req, res) => {
    const file = path.join(dir, path.basename(decodeURIComponent(new URL(req.url!, "http://x").pathname)));
    if (!file.endsWith(".raucb") || !fs.existsSync(file)) return void res.writeHead(404).end();
    const size = fs.statSync(file).size;
    const range = /^bytes=(\d+)-$/.exec(req.headers.range ?? "");
    const from = range ? Number(range[1]) : 0;
    res.writeHead(range ? 206 : 200, { "content-length": size - from, ...(range ? { "content-range": `bytes ${from}-${size - 1}/${size}` } : {}) });
    fs.createReadStream(file, { start: from }).pipe(res);
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server)));
}

/**
 * The test CAs, slot A's image (1.0.0) and the bundles (2.0.0, 2.1.0), built once per guest
 * root file system, agent bundle and image code (about 10 minutes on a busy 2-core machine),
 * then reused: a re-run only makes the per-run disks (ESP, data disk with the run's token).
 */
function guestArtifacts(tar: string, agentBundle: string) {
  const key = crypto.createHash("sha256").update(path.basename(tar)).update(fs.readFileSync(agentBundle))
    .update(fs.readFileSync(path.join(HERE, "image.ts"))).digest("hex").slice(0, 12);
  const dir = path.join(CACHE, `artifacts-${key}`);
  const index = path.join(dir, "bundles.json");
  const tls = { cert: path.join(dir, "bundle-server.pem"), key: path.join(dir, "bundle-server.key") };
  const slotA = path.join(dir, "slotA-1.0.0.img");
  if (fs.existsSync(index)) {
    say(`reusing the guest's images and bundles in ${dir}`);
    return { dir, tls, slotA, bundles: JSON.parse(fs.readFileSync(index, "utf8")) as Record<string, Bundle> };
  }
  for (const old of fs.readdirSync(CACHE).filter((name) => name.startsWith("artifacts-"))) fs.rmSync(path.join(CACHE, old), { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  say(`making the guest's slot image and bundles in ${dir} (mkfs.ext4 -d, rauc bundle)`);
  const signer = makeSigner(dir);
  // system images are admitted from https:// (or oci://) only: the bundle server has a
  // self-signed certificate for 10.0.2.2, which the guest's agent trusts (NODE_EXTRA_CA_CERTS)
  execFileSync("openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", tls.key, "-out", tls.cert,
    "-days", "3650", "-subj", "/CN=10.0.2.2", "-addext", "subjectAltName=IP:10.0.2.2"], { stdio: "ignore" });
  const tree = path.join(dir, "tree");
  guestTree(tar, tree, agentBundle, fs.readFileSync(signer.caCert, "utf8"), fs.readFileSync(tls.cert, "utf8"));
  const bytes = slotBytes(tree);
  markVersion(tree, "1.0.0");
  ext4Image(tree, slotA, bytes);
  const made: Record<string, Bundle> = {};
  for (const [version, failing] of [["2.0.0", false], ["2.1.0", true]] as const) {
    markVersion(tree, version, { failingHealthCheck: failing });
    const image = path.join(dir, `rootfs-${version}.ext4`);
    ext4Image(tree, image, bytes);
    made[version] = makeBundle(dir, signer, image, version);
    say(`bundle ${version}${failing ? " (its health check fails)" : ""}: ${(fs.statSync(made[version].file).size / 1e6).toFixed(0)} MB, sha256 ${made[version].sha256.slice(0, 12)}...`);
  }
  fs.rmSync(tree, { recursive: true, force: true });
  fs.writeFileSync(index, JSON.stringify(made));
  return { dir, tls, slotA, bundles: made };
}

interface CaseResult { name: string; ok: boolean; seconds: number; detail: string }

async function main(): Promise<number> {
  if (!ensureTools()) return 0;
  if (process.getuid?.() !== 0) {
    console.log("skipped: root is needed (mmdebstrap and the guest's file ownership)");
    return 0;
  }
  const work = fs.mkdtempSync(path.join(CACHE, "run-"));
  say(`work directory ${work}`);
  let service: RunningService | null = null;
  let bundles: https.Server | null = null;
  let vm: Vm | null = null;
  const results: CaseResult[] = [];
  try {
    say("building the agent (npm run build:agent)");
    execFileSync("npm", ["run", "--silent", "build:agent"], { cwd: ROOT, stdio: ["ignore", "ignore", "inherit"] });
    const agentBundle = path.join(ROOT, "agent/dist/fleet-agent.mjs");

    const apiKey = `fm_e2e_${crypto.randomBytes(24).toString("hex")}`;
    const config = loadConfig({
      ...process.env, NODE_ENV: "production", DATA_DIR: path.join(work, "db"), DATABASE_URL: "", PORT: "0", HOST: "127.0.0.1",
      BOOTSTRAP_ADMIN_PASSWORD: "e2e-password-123", BOOTSTRAP_API_KEY: apiKey, HEARTBEAT_INTERVAL_SECONDS: "10",
      RATE_LIMIT_PER_SOURCE: "0", RATE_LIMIT_PER_CREDENTIAL: "0", RATE_LIMIT_PER_DEVICE: "0", LOG_LEVEL: "warn",
    });
    service = await startService(config, createLogger("warn", fs.createWriteStream(path.join(work, "service.log"))));
    const port = Number(new URL(service.url).port);
    say(`service on ${service.url} (the guest: http://10.0.2.2:${port}); log ${path.join(work, "service.log")}`);
    const api = async (method: string, url: string, body?: unknown): Promise<any> => {
      const call = () => fetch(`${service!.url}/api/v1${url}`, {
        method, headers: { "x-api-key": apiKey, ...(body === undefined ? {} : { "content-type": "application/json" }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      // a kept-alive connection the service closed meanwhile: a GET is asked again once
      const res = await call().catch((error: Error) => {
        if (method !== "GET") throw new Error(`${method} ${url}: ${error.message} (${(error.cause as Error | undefined)?.message ?? "no cause"})`);
        return call().catch((again: Error) => { throw new Error(`${method} ${url}: ${again.message} (${(again.cause as Error | undefined)?.message ?? "no cause"})`); });
      });
      const text = await res.text();
      if (res.status >= 300) throw new Error(`${method} ${url}: ${res.status} ${text}`);
      return text ? JSON.parse(text) : null;
    };
    await api("POST", "/ca-certificates/generate", { name: "e2e-ca", commonName: "Fleet E2E Device CA" });
    const token = await api("POST", "/enrollment-tokens", { name: "e2e vm", labels: { e2e: "os-update" }, maxUses: 2 });

    const tar = debianRootfs(say);
    const artifacts = guestArtifacts(tar, agentBundle);
    const { tls } = artifacts;
    const made = artifacts.bundles;
    const disks = { esp: path.join(work, "esp.img"), slotA: path.join(work, "slotA.img"), slotB: path.join(work, "slotB.img"), data: path.join(work, "data.img") };
    execFileSync("cp", ["--sparse=always", artifacts.slotA, disks.slotA]);
    fs.writeFileSync(disks.slotB, Buffer.alloc(0));
    fs.truncateSync(disks.slotB, fs.statSync(disks.slotA).size);
    espImage(disks.esp, work);
    dataImage(disks.data, work, { serviceUrl: `http://10.0.2.2:${port}`, enrollmentToken: token.token, keyringPem: "", deviceId: "fleet-vm" });

    bundles = await serveBundles(artifacts.dir, tls);
    const bundlePort = (bundles.address() as { port: number }).port;
    const organization = await service.services.prisma.organization.findFirstOrThrow({ where: { slug: "default" } });
    for (const version of ["2.0.0", "2.1.0"]) {
      // the broken version's trial is cut short (its check never passes); 2.0.0 keeps the agent's 300 s
      const text = manifest(version, `https://10.0.2.2:${bundlePort}/${path.basename(made[version].file)}`, `sha256:${made[version].sha256}`, version === "2.1.0" ? HEALTH_TIMEOUT : undefined);
      const parsed = parseManifest(text, `apps/fleet-vm-os/${version}/app.yaml`);
      if (parsed.kind !== "admitted") throw new Error(`manifest ${version} not admitted: ${JSON.stringify(parsed)}`);
      await service.services.prisma.$transaction((tx) => ingestManifests(tx, organization.id, { type: "git", registryId: crypto.randomUUID(), revision: "e2e" }, [
        { path: parsed.path, manifest: parsed.manifest, warnings: parsed.warnings, digest: manifestDigest(text), icon: null },
      ]));
    }
    const app = await service.services.prisma.application.findFirstOrThrow({ where: { organizationId: organization.id, appKey: "fleet-vm-os" } });

    say("starting the virtual machine (OVMF, GRUB, Debian; slot A holds 1.0.0)");
    vm = startVm(work, disks);
    say(`serial console: ${vm.serialLog}`);
    const device = await waitFor("the guest's agent to enroll and report RAUC", 15 * 60_000, async () => {
      const list = await api("GET", "/devices?limit=50");
      const found = (list.items as any[]).find((d) => d.reportedDeviceId === "fleet-vm" || d.name === "fleet-vm");
      if (!found) return undefined;
      const shown = await api("GET", `/devices/${found.id}`);
      return shown.facts?.rauc === true ? shown : undefined;
    }, vm);
    say(`device ${device.id} enrolled, RAUC booted slot ${device.facts["rauc.bootedSlot"]} (boots so far: ${vm.boots().map((b) => b.slot).join(", ")})`);

    const deploy = async (version: string) => {
      const created = await api("POST", "/deployments", {
        name: `os ${version}`, applicationId: app.id, version, profileId: "os", parameters: {},
        target: { labelSelector: { e2e: "os-update" } }, strategy: { type: "all-at-once" },
      });
      await api("POST", `/deployments/${created.id}/start`);
      return created.id as string;
    };
    const settled = (id: string, minutes: number) => waitFor(`deployment ${id} to settle`, minutes * 60_000, async () => {
      const entries = (await api("GET", `/deployments/${id}/devices?limit=10`)).items as Array<{ state: string; message: string | null }>;
      const entry = entries[0];
      return entry && (entry.state === "running" || entry.state === "failed") ? entry : undefined;
    }, vm!);

    // Case 1: a good update, committed
    {
      const t0 = Date.now();
      const bootsBefore = vm.boots().length;
      say("case 1: deploying 2.0.0 (slot B)");
      const id = await deploy("2.0.0");
      const entry = await settled(id, 30);
      const shown = await api("GET", `/devices/${device.id}`);
      const history = (await api("GET", `/devices/${device.id}/system-updates`)).items as any[];
      const env = readGrubenv(disks.esp, work);
      const boots = vm.boots().slice(bootsBefore).map((b) => b.slot);
      const problems: string[] = [];
      if (entry.state !== "running") problems.push(`the device is ${entry.state}: ${entry.message}`);
      if (shown.system?.booted?.slot !== "B" || shown.system?.booted?.version !== "2.0.0") problems.push(`system booted ${JSON.stringify(shown.system?.booted)}`);
      if (history[0]?.outcome !== "committed") problems.push(`history says ${JSON.stringify(history[0])}`);
      if (boots.join(",") !== "B") problems.push(`GRUB booted ${boots.join(",") || "nothing"} (expected one boot into B)`);
      if (env.B_OK !== "1" || env.B_TRY !== "0") problems.push(`grubenv ${JSON.stringify(env)}`);
      say(`case 1: deployment device ${entry.state}; system booted ${shown.system?.booted?.slot} ${shown.system?.booted?.version}; history ${history[0]?.outcome}; GRUB boots ${boots.join(" ")}; grubenv ORDER=${env.ORDER} B_OK=${env.B_OK} B_TRY=${env.B_TRY}`);
      results.push({ name: "2.0.0 installed, rebooted into B, healthy, committed", ok: !problems.length, seconds: (Date.now() - t0) / 1000, detail: problems.join("; ") });
    }

    // Routine reboots of the committed system: the agent marks the booted slot good at every
    // boot (after the device's own checks), so GRUB's TRY flag never sends a later reboot to A
    if (results[0].ok) {
      const t0 = Date.now();
      const bootsBefore = vm.boots().length;
      say("routine reboots: two reboot actions of the committed 2.0.0");
      const problems: string[] = [];
      for (let n = 1; n <= 2; n++) {
        const action = await api("POST", "/device-actions", { deviceId: device.id, kind: "reboot", reason: `e2e routine reboot ${n}` });
        const done = await waitFor(`reboot action ${n}`, 15 * 60_000, async () => {
          const shown = await api("GET", `/device-actions/${action.id}`);
          return ["succeeded", "failed", "expired", "cancelled"].includes(shown.state) ? shown : undefined;
        }, vm);
        if (done.state !== "succeeded") problems.push(`reboot ${n} ${done.state}: ${done.message}`);
        // the routine mark-good of this boot, seen in the bootloader's environment
        await waitFor(`slot B marked good after reboot ${n}`, 5 * 60_000, async () => (readGrubenv(disks.esp, work).B_TRY === "0" ? true : undefined), vm)
          .catch((error: Error) => problems.push(error.message));
      }
      const boots = vm.boots().slice(bootsBefore).map((b) => b.slot);
      const env = readGrubenv(disks.esp, work);
      const shown = await api("GET", `/devices/${device.id}`);
      if (boots.join(",") !== "B,B") problems.push(`GRUB booted ${boots.join(",") || "nothing"} (expected B twice)`);
      if (shown.system?.booted?.slot !== "B" || shown.system?.booted?.version !== "2.0.0") problems.push(`system booted ${JSON.stringify(shown.system?.booted)}`);
      say(`routine reboots: GRUB boots ${boots.join(" ")}; grubenv ORDER=${env.ORDER} B_OK=${env.B_OK} B_TRY=${env.B_TRY}; system booted ${shown.system?.booted?.slot} ${shown.system?.booted?.version}`);
      results.push({ name: "two ordinary reboots of the committed system stay in B (marked good at every boot)", ok: !problems.length, seconds: (Date.now() - t0) / 1000, detail: problems.join("; ") });
    }

    // Case 2: an update whose health check fails, rolled back by the bootloader
    if (results.every((r) => r.ok)) {
      const t0 = Date.now();
      const bootsBefore = vm.boots().length;
      say(`case 2: deploying 2.1.0 (slot A; its health check fails; its stated time is ${HEALTH_TIMEOUT})`);
      const id = await deploy("2.1.0");
      const entry = await settled(id, 40);
      const shown = await api("GET", `/devices/${device.id}`);
      const history = (await api("GET", `/devices/${device.id}/system-updates`)).items as any[];
      const env = readGrubenv(disks.esp, work);
      const boots = vm.boots().slice(bootsBefore).map((b) => b.slot);
      const problems: string[] = [];
      if (entry.state !== "failed" || !/rolled back/.test(entry.message ?? "")) problems.push(`the device is ${entry.state}: ${entry.message}`);
      if (shown.system?.booted?.slot !== "B" || shown.system?.booted?.version !== "2.0.0") problems.push(`system booted ${JSON.stringify(shown.system?.booted)}`);
      if (history[0]?.outcome !== "rolled-back") problems.push(`history says ${JSON.stringify(history[0])}`);
      if (boots.join(",") !== "A,B") problems.push(`GRUB booted ${boots.join(",") || "nothing"} (expected A on trial, then B)`);
      if (env.A_OK !== "0") problems.push(`grubenv ${JSON.stringify(env)}`);
      say(`case 2: deployment device ${entry.state}: ${entry.message}`);
      say(`case 2: system booted ${shown.system?.booted?.slot} ${shown.system?.booted?.version}; history ${history[0]?.outcome}: ${history[0]?.reason}; GRUB boots ${boots.join(" ")}; grubenv ORDER=${env.ORDER} A_OK=${env.A_OK}`);
      results.push({ name: "2.1.0 installed, rebooted into A, health check failed, marked bad, back in B", ok: !problems.length, seconds: (Date.now() - t0) / 1000, detail: problems.join("; ") });
    }
  } catch (error) {
    say(`error: ${(error as Error).message}`);
    results.push({ name: "run", ok: false, seconds: (Date.now() - started) / 1000, detail: (error as Error).message });
    if (vm) say(`last serial lines:\n${vm.serial().split("\n").slice(-25).join("\n")}`);
  } finally {
    await vm?.stop();
    bundles?.close();
    await service?.stop().catch(() => undefined);
  }
  for (const r of results) console.log(`${r.ok ? "PASS" : "FAIL"}  ${r.name} (${r.seconds.toFixed(0)} s)${r.detail ? `: ${r.detail}` : ""}`);
  const ok = results.length > 0 && results.every((r) => r.ok);
  console.log(`${ok ? "PASS" : "FAIL"}  e2e:os-update in ${((Date.now() - started) / 1000).toFixed(0)} s (work directory ${work}${ok ? ", removed" : ", kept"})`);
  if (ok) fs.rmSync(work, { recursive: true, force: true });
  return ok ? 0 : 1;
}

process.exitCode = await main();
