// Real RAUC (Debian's rauc 1.8) on loop devices for the agent's OS update tests (docs/os-updates.md):
//
// * bundles (buildRaucBundles, once per test file): a test update CA and its signing certificate
//   made with openssl, root file system images (small ext4 images holding an os-release line),
//   signed by `rauc bundle` in the `plain` format; one signed by another CA (a bad signature
//   for the device's keyring) and one for another compatible.
// * a device (startRaucLab): two slots (rootfs.0 "A", rootfs.1 "B") on loop devices over ext4
//   image files, a system.conf (compatible, bootloader=custom, the keyring, a central status
//   file), and `rauc service` on a private D-Bus daemon of the lab (Debian's rauc is built with
//   the service: `rauc install` and `rauc status` are D-Bus clients of it; the agent reaches it
//   through DBUS_SYSTEM_BUS_ADDRESS).
//
// What is simulated, and only this: the boot. The bootloader is RAUC's `custom` backend, a script
// of the test (test/support/rauc/bootloader.sh) keeping boot order, slot states and attempts in a
// file; boot() is the "reboot": the lab's boot.sh decides the slot from that file (using up a trial
// attempt as a bootloader counts it), the RAUC service starts again told that slot is booted
// (--override-boot-slot: /proc/cmdline is the host's), and a new boot id is written to the file
// the agent reads it from (FLEET_AGENT_BOOT_ID_FILE). Everything else (signature and compatible
// checks, the slot writes, mark-good and mark-bad through the bootloader interface) is RAUC's own.
//
// Why `plain` bundles: RAUC's default `verity` format mounts the bundle through dm-verity, and this
// machine's kernel has no device mapper (/proc/misc lists none); plain bundles are loop-mounted
// squashfs, verified as a whole by their signature before they are mounted.
import { execFile, spawn, type ChildProcess } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import { promisify } from "node:util";
import { ROOT } from "./server-process.js";

const runFile = promisify(execFile);
const WORK = "/dev/shm/fleet-tests";
const SCRIPTS = path.join(ROOT, "test/support/rauc");
export const LAB_COMPATIBLE = "fleet-test-board";
/** the size of every slot image and root file system image: 4 MiB */
const IMAGE_BYTES = 4 * 1024 * 1024;

export interface RaucBundle {
  file: string;
  /** sha256 of the bundle file (what the agent is given and checks after the download) */
  sha256: string;
  version: string;
  /** sha256 of the root file system image inside: what the slot holds after the install */
  imageSha256: string;
}

export interface RaucBundles {
  dir: string;
  /** the device's keyring: the test update CA */
  keyringPem: string;
  /** signed with the test CA's signing certificate, compatible fleet-test-board */
  good: (version: string) => RaucBundle;
  /** signed by a CA the device's keyring does not hold */
  otherCa: RaucBundle;
  /** signed with the right key, for compatible "another-board" */
  wrongCompatible: RaucBundle;
  close(): void;
}

async function sh(command: string, args: string[], cwd?: string): Promise<string> {
  return (await runFile(command, args, { cwd, timeout: 120_000, maxBuffer: 16 * 1024 * 1024 })).stdout;
}

function sha256Of(file: string): string {
  return crypto.createHash("sha256").update(fs.readFileSync(file)).digest("hex");
}

async function makeCa(dir: string, name: string, cn: string): Promise<{ cert: string; key: string }> {
  const cert = path.join(dir, `${name}.pem`);
  const key = path.join(dir, `${name}.key`);
  await sh("openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key, "-out", cert,
    "-days", "30", "-subj", `/CN=${cn}`, "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign"]);
  return { cert, key };
}

/** A signing certificate issued by `ca` (what a build host signs bundles with). */
async function makeSigner(dir: string, ca: { cert: string; key: string }, name: string): Promise<{ cert: string; key: string }> {
  const key = path.join(dir, `${name}.key`);
  const csr = path.join(dir, `${name}.csr`);
  const cert = path.join(dir, `${name}.pem`);
  const ext = path.join(dir, `${name}.ext`);
  fs.writeFileSync(ext, "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\n");
  await sh("openssl", ["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key, "-out", csr, "-subj", `/CN=${name}`]);
  await sh("openssl", ["x509", "-req", "-in", csr, "-CA", ca.cert, "-CAkey", ca.key, "-CAcreateserial", "-out", cert, "-days", "30", "-extfile", ext]);
  return { cert, key };
}

/** An ext4 image of IMAGE_BYTES holding /etc/os-release naming `version`, and random bytes that make each image differ. */
async function makeRootfs(file: string, version: string): Promise<void> {
  const tree = `${file}.tree`;
  fs.mkdirSync(path.join(tree, "etc"), { recursive: true });
  fs.writeFileSync(path.join(tree, "etc/os-release"), `NAME="Fleet Test OS"\nVERSION_ID=${version}\n`);
  fs.writeFileSync(path.join(tree, "payload"), crypto.randomBytes(64 * 1024));
  fs.writeFileSync(file, Buffer.alloc(0));
  fs.truncateSync(file, IMAGE_BYTES);
  // a fixed UUID and hash seed would make it reproducible; random ones are fine for a test
  await sh("mkfs.ext4", ["-q", "-d", tree, file]);
  fs.rmSync(tree, { recursive: true, force: true });
}

async function makeBundle(dir: string, name: string, signer: { cert: string; key: string }, opts: { version: string; compatible: string; rootfs?: string }): Promise<RaucBundle> {
  const content = path.join(dir, `${name}.content`);
  fs.mkdirSync(content, { recursive: true });
  const image = path.join(content, "rootfs.ext4");
  if (opts.rootfs) fs.copyFileSync(opts.rootfs, image);
  else await makeRootfs(image, opts.version);
  fs.writeFileSync(path.join(content, "manifest.raucm"),
    `[update]\ncompatible=${opts.compatible}\nversion=${opts.version}\n\n[bundle]\nformat=plain\n\n[image.rootfs]\nfilename=rootfs.ext4\n`);
  const file = path.join(dir, `${name}.raucb`);
  await sh("rauc", ["bundle", `--cert=${signer.cert}`, `--key=${signer.key}`, content, file]);
  const imageSha256 = sha256Of(image);
  fs.rmSync(content, { recursive: true, force: true });
  return { file, sha256: sha256Of(file), version: opts.version, imageSha256 };
}

/**
 * The test CA, its signer, and bundles of `versions` (each a root file system of its own), one of
 * another CA and one of another compatible. About a second of openssl, mkfs and mksquashfs.
 */
export async function buildRaucBundles(versions: string[]): Promise<RaucBundles> {
  fs.mkdirSync(WORK, { recursive: true });
  const dir = fs.mkdtempSync(path.join(WORK, "rauc-bundles-"));
  const ca = await makeCa(dir, "update-ca", "Fleet Test Update CA");
  const signer = await makeSigner(dir, ca, "update-signer");
  const otherCa = await makeCa(dir, "other-ca", "Someone Else's Update CA");
  const otherSigner = await makeSigner(dir, otherCa, "other-signer");
  const good = new Map<string, RaucBundle>();
  for (const version of versions) good.set(version, await makeBundle(dir, `good-${version}`, signer, { version, compatible: LAB_COMPATIBLE }));
  const other = await makeBundle(dir, "other-ca", otherSigner, { version: "66.0.0", compatible: LAB_COMPATIBLE });
  const wrong = await makeBundle(dir, "wrong-compatible", signer, { version: "77.0.0", compatible: "another-board" });
  return {
    dir,
    keyringPem: ca.cert,
    good: (version) => {
      const bundle = good.get(version);
      if (!bundle) throw new Error(`no bundle of version ${version} was built (buildRaucBundles([...]))`);
      return bundle;
    },
    otherCa: other,
    wrongCompatible: wrong,
    close: () => fs.rmSync(dir, { recursive: true, force: true }),
  };
}

export interface RaucLab {
  dir: string;
  /** rauc's --conf for the agent (FLEET_AGENT_RAUC_CONF) */
  systemConf: string;
  /** the agent's environment to reach this lab's RAUC and boot id */
  agentEnv: Record<string, string>;
  /** the file the agent reads the boot id from (a new id at every boot()) */
  bootIdFile: string;
  /** the slot (A or B) the last boot() booted */
  booted: string;
  /** "Reboots": the bootloader file decides the slot, RAUC's service starts again on it, a new boot id. Answers the slot. */
  boot(): Promise<string>;
  /** what the bootloader file holds (order, per slot state and attempts) */
  bootState(): Record<string, string>;
  /** sha256 of the first `bytes` bytes of a slot's loop device */
  slotSha256(slot: "A" | "B", bytes?: number): string;
  /** `rauc status --detailed --output-format=json` */
  status(): Promise<any>;
  /** holds the next install in RAUC's pre-install handler until release() */
  holdInstalls(): void;
  /** whether an install waits at the gate */
  installHeld(): boolean;
  release(): void;
  close(): Promise<void>;
}

/** Ends a child process of the test (SIGTERM, or SIGKILL: a power cut) and waits until it exited. */
export async function endProcess(child: ChildProcess | null, signal: NodeJS.Signals = "SIGTERM"): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill(signal);
  await exited;
}

function waitForSocket(file: string, ms: number): Promise<void> {
  const until = Date.now() + ms;
  return new Promise((resolve, reject) => {
    const look = () => {
      if (fs.existsSync(file)) return resolve();
      if (Date.now() > until) return reject(new Error(`${file} did not appear`));
      setTimeout(look, 50);
    };
    look();
  });
}

/** A device with two RAUC slots on loop devices, slot A booted and good, trusting `keyringPem`. */
export async function startRaucLab(keyringPem: string): Promise<RaucLab> {
  fs.mkdirSync(WORK, { recursive: true });
  const dir = fs.mkdtempSync(path.join(WORK, "rauc-lab-"));
  const loops: string[] = [];
  let dbus: ChildProcess | null = null;
  let service: ChildProcess | null = null;
  const serviceLog = path.join(dir, "rauc-service.log");
  const busSocket = path.join(dir, "system-bus.sock");
  const bootIdFile = path.join(dir, "boot_id");
  const env = { ...process.env, RAUC_LAB_DIR: dir, DBUS_SYSTEM_BUS_ADDRESS: `unix:path=${busSocket}` };

  const stopService = async () => {
    const running = service;
    service = null;
    await endProcess(running);
  };

  const close = async () => {
    await stopService();
    await endProcess(dbus);
    for (const loop of loops) await sh("losetup", ["-d", loop]).catch(() => undefined);
    fs.rmSync(dir, { recursive: true, force: true });
  };

  try {
    // slot A: the system as it came from the factory (an image RAUC never installed); B: empty
    await makeRootfs(path.join(dir, "slot-a.img"), "1.0.0");
    fs.writeFileSync(path.join(dir, "slot-b.img"), Buffer.alloc(0));
    fs.truncateSync(path.join(dir, "slot-b.img"), IMAGE_BYTES);
    for (const image of ["slot-a.img", "slot-b.img"]) loops.push((await sh("losetup", ["-f", "--show", path.join(dir, image)])).trim());
    fs.copyFileSync(keyringPem, path.join(dir, "keyring.pem"));
    fs.writeFileSync(path.join(dir, "boot-state"), 'order="A B"\nA_state=good\nA_attempts=0\nB_state=bad\nB_attempts=0\n');
    fs.mkdirSync(path.join(dir, "data"));
    fs.mkdirSync(path.join(dir, "mnt"));
    const systemConf = path.join(dir, "system.conf");
    fs.writeFileSync(systemConf, [
      "[system]", `compatible=${LAB_COMPATIBLE}`, "bootloader=custom", `mountprefix=${dir}/mnt`, `data-directory=${dir}/data`, "bundle-formats=plain", "",
      "[handlers]", `bootloader-custom-backend=${SCRIPTS}/bootloader.sh`, `pre-install=${SCRIPTS}/pre-install.sh`, "",
      "[keyring]", `path=${dir}/keyring.pem`, "",
      "[slot.rootfs.0]", `device=${loops[0]}`, "type=ext4", "bootname=A", "",
      "[slot.rootfs.1]", `device=${loops[1]}`, "type=ext4", "bootname=B", "",
    ].join("\n"));
    // a bus of the lab's own: the machine's system bus is not ours to register names on
    fs.writeFileSync(path.join(dir, "bus.conf"), `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN" "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig><type>custom</type><listen>unix:path=${busSocket}</listen><auth>EXTERNAL</auth>
<policy context="default"><allow send_destination="*"/><allow receive_sender="*"/><allow own="*"/><allow user="*"/></policy></busconfig>
`);
    dbus = spawn("dbus-daemon", [`--config-file=${path.join(dir, "bus.conf")}`, "--nofork"], { stdio: "ignore" });
    await waitForSocket(busSocket, 10_000);

    const lab: RaucLab = {
      dir, systemConf, bootIdFile, booted: "",
      agentEnv: { DBUS_SYSTEM_BUS_ADDRESS: env.DBUS_SYSTEM_BUS_ADDRESS, FLEET_AGENT_RAUC_CONF: systemConf, FLEET_AGENT_BOOT_ID_FILE: bootIdFile },
      async boot() {
        await stopService();
        const slot = (await runFile(path.join(SCRIPTS, "boot.sh"), [], { env })).stdout.trim();
        fs.writeFileSync(bootIdFile, `${crypto.randomUUID()}\n`);
        const log = fs.openSync(serviceLog, "a");
        service = spawn("rauc", ["service", `--conf=${systemConf}`, `--override-boot-slot=${slot}`], { env, stdio: ["ignore", log, log] });
        fs.closeSync(log);
        lab.booted = slot;
        // the service answers once it owns its bus name: `rauc status` through it
        const until = Date.now() + 15_000;
        for (;;) {
          try {
            await lab.status();
            break;
          } catch (error) {
            if (Date.now() > until || service.exitCode !== null) throw new Error(`rauc service did not start: ${(error as Error).message}\n${fs.readFileSync(serviceLog, "utf8").slice(-2000)}`);
            await new Promise((resolve) => setTimeout(resolve, 100));
          }
        }
        return slot;
      },
      bootState() {
        const fields: Record<string, string> = {};
        for (const line of fs.readFileSync(path.join(dir, "boot-state"), "utf8").split("\n")) {
          const at = line.indexOf("=");
          if (at > 0) fields[line.slice(0, at)] = line.slice(at + 1).replace(/^"|"$/g, "");
        }
        return fields;
      },
      slotSha256(slot, bytes = IMAGE_BYTES) {
        const fd = fs.openSync(loops[slot === "A" ? 0 : 1], "r");
        try {
          const buffer = Buffer.alloc(bytes);
          fs.readSync(fd, buffer, 0, bytes, 0);
          return crypto.createHash("sha256").update(buffer).digest("hex");
        } finally {
          fs.closeSync(fd);
        }
      },
      async status() {
        const { stdout } = await runFile("rauc", ["status", "--detailed", "--output-format=json", `--conf=${systemConf}`], { env, timeout: 30_000 });
        return JSON.parse(stdout);
      },
      holdInstalls: () => fs.writeFileSync(path.join(dir, "install-gate"), ""),
      installHeld: () => fs.existsSync(path.join(dir, "install-gate.reached")),
      release() {
        fs.rmSync(path.join(dir, "install-gate"), { force: true });
        fs.rmSync(path.join(dir, "install-gate.reached"), { force: true });
      },
      close,
    };
    await lab.boot();
    return lab;
  } catch (error) {
    await close();
    throw error;
  }
}

export interface BundleServer {
  /** http://127.0.0.1:PORT/<file name> of a bundle */
  urlOf(bundle: RaucBundle): string;
  /** the next response of the whole file `bundle` stops after `bytes` bytes (the connection cut) */
  cutNext(bundle: RaucBundle, bytes: number): void;
  /** the Range headers asked, by file name */
  ranges: Array<{ file: string; range: string }>;
  close(): Promise<void>;
}

/** The bundles over HTTP on loopback, answering Range requests (206) as a web server does. */
export async function serveBundles(bundles: RaucBundles): Promise<BundleServer> {
  const cuts = new Map<string, number>();
  const ranges: BundleServer["ranges"] = [];
  const server = http.createServer((req, res) => {
    const name = path.basename(decodeURIComponent(new URL(req.url ?? "/", "http://x").pathname));
    const file = path.join(bundles.dir, name);
    if (!name.endsWith(".raucb") || !fs.existsSync(file)) {
      res.writeHead(404).end("not found");
      return;
    }
    const size = fs.statSync(file).size;
    const range = /^bytes=(\d+)-$/.exec(req.headers.range ?? "");
    if (req.headers.range) ranges.push({ file: name, range: req.headers.range });
    const start = range ? Number(range[1]) : 0;
    if (start >= size) {
      res.writeHead(416, { "content-range": `bytes */${size}` }).end();
      return;
    }
    res.writeHead(range ? 206 : 200, { "content-length": String(size - start), "accept-ranges": "bytes", ...(range ? { "content-range": `bytes ${start}-${size - 1}/${size}` } : {}) });
    const cut = range ? undefined : cuts.get(name);
    if (cut !== undefined) {
      cuts.delete(name);
      res.write(fs.readFileSync(file).subarray(0, cut), () => res.destroy());
      return;
    }
    fs.createReadStream(file, { start }).pipe(res);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  return {
    urlOf: (bundle) => `http://127.0.0.1:${port}/${path.basename(bundle.file)}`,
    cutNext: (bundle, bytes) => cuts.set(path.basename(bundle.file), bytes),
    ranges,
    close: () => new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}
