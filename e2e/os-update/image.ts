// The guest's disks for the OS update test in a virtual machine (docs/os-updates.md, "A real
// reboot in a virtual machine"), built without a mount or a partition device node:
//
// * a Debian bookworm root file system by mmdebstrap (kernel, systemd, Debian's rauc and its
//   D-Bus service, podman for the agent's engine), cached as a tarball keyed by its package list;
// * the tree made a device: the host's node binary and the bundled agent (npm run build:agent),
//   the agent's unit (enrolling itself on first start), RAUC's system.conf (GRUB backend, slots
//   vdb and vdc) and keyring, fstab for the ESP and the data disk, DHCP on the virtio NIC;
// * slot images as whole-disk ext4 made by `mkfs.ext4 -d` from that tree, one per version;
// * the ESP: a GPT disk image (sgdisk) whose FAT partition (mtools, at its offset) holds GRUB
//   (grub-mkstandalone with grub.cfg embedded) and the grubenv RAUC edits;
// * the data disk (ext4): the agent's state directory and its enrollment settings;
// * RAUC bundles of slot images, signed by a test CA made with openssl (as test/support/rauc-lab.ts).
import { execFileSync } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";

export const CACHE = process.env.FLEET_E2E_CACHE ?? "/var/tmp/fleet-e2e-os-update";
export const COMPATIBLE = "fleet-e2e-vm";
const HERE = path.dirname(new URL(import.meta.url).pathname);

const PACKAGES = [
  "linux-image-amd64", "systemd-sysv", "systemd-resolved", "rauc", "rauc-service", "dbus", "ca-certificates", "iproute2",
  "udev", "e2fsprogs", "grub-common", "dosfstools", "kmod", "initramfs-tools", "podman", "podman-compose",
];
const EXCLUDES = ["/usr/share/doc/*", "/usr/share/man/*", "/usr/share/locale/*"];
/** kernel drivers a virtio guest never loads: left out of the slot images to keep bundles small */
const UNUSED_DRIVERS = ["gpu", "media", "infiniband", "net/wireless", "net/ethernet", "staging", "iio", "comedi", "isdn", "bluetooth", "usb", "sound", "hwmon", "input/touchscreen", "scsi"];

export function sh(command: string, args: string[], opts: { cwd?: string; input?: string } = {}): string {
  return execFileSync(command, args, { cwd: opts.cwd, input: opts.input, encoding: "utf8", maxBuffer: 64 * 1024 * 1024, stdio: ["pipe", "pipe", "pipe"] });
}

export function sha256Of(file: string): string {
  const hash = crypto.createHash("sha256");
  const fd = fs.openSync(file, "r");
  const buffer = Buffer.alloc(8 * 1024 * 1024);
  for (;;) {
    const n = fs.readSync(fd, buffer, 0, buffer.length, null);
    if (n === 0) break;
    hash.update(buffer.subarray(0, n));
  }
  fs.closeSync(fd);
  return hash.digest("hex");
}

/** The mmdebstrap tarball: built once per package list (about 3 minutes), then reused. */
export function debianRootfs(say: (line: string) => void): string {
  const args = ["--variant=apt", `--include=${PACKAGES.join(",")}`, ...EXCLUDES.map((e) => `--dpkgopt=path-exclude=${e}`), "bookworm"];
  const key = crypto.createHash("sha256").update(args.join(" ")).digest("hex").slice(0, 12);
  const tar = path.join(CACHE, `rootfs-${key}.tar`);
  if (fs.existsSync(tar)) return tar;
  fs.mkdirSync(CACHE, { recursive: true });
  say(`building the guest's Debian root file system with mmdebstrap (cached as ${tar})`);
  execFileSync("mmdebstrap", [...args, `${tar}.part`], { stdio: ["ignore", "ignore", "inherit"] });
  fs.renameSync(`${tar}.part`, tar);
  return tar;
}

export interface GuestSettings {
  /** the service as the guest reaches it (qemu user network: the host's loopback is 10.0.2.2) */
  serviceUrl: string;
  enrollmentToken: string;
  keyringPem: string;
  deviceId: string;
}

function write(file: string, text: string, mode = 0o644): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, text, { mode });
}

/** Extracts the tarball into `tree` and makes it a device (every slot image is made from it). */
export function guestTree(tar: string, tree: string, agentBundle: string, keyringPem: string, bundleServerCertPem: string): void {
  fs.mkdirSync(tree, { recursive: true });
  sh("tar", ["-xf", tar, "-C", tree]);
  for (const dir of fs.readdirSync(path.join(tree, "usr/lib/modules"))) {
    for (const driver of UNUSED_DRIVERS) fs.rmSync(path.join(tree, "usr/lib/modules", dir, "kernel/drivers", driver), { recursive: true, force: true });
  }
  // virtio_net is under drivers/net, kept; the old-kernel links mmdebstrap leaves point nowhere useful
  for (const link of ["vmlinuz.old", "initrd.img.old"]) fs.rmSync(path.join(tree, link), { force: true });

  fs.copyFileSync(process.execPath, path.join(tree, "usr/local/bin/node"));
  fs.chmodSync(path.join(tree, "usr/local/bin/node"), 0o755);
  write(path.join(tree, "opt/fleet-agent/fleet-agent.mjs"), fs.readFileSync(agentBundle, "utf8"));
  write(path.join(tree, "usr/local/bin/fleet-agent"), `#!/bin/sh\nexec /usr/local/bin/node /opt/fleet-agent/fleet-agent.mjs "$@"\n`, 0o755);

  write(path.join(tree, "etc/hostname"), "fleet-vm\n");
  write(path.join(tree, "etc/fstab"), [
    "# the ESP (GRUB and the grubenv RAUC edits) and the data disk (the agent's state, RAUC's slot status)",
    "/dev/vda1 /boot/efi vfat defaults 0 0",
    "/dev/vdd /data ext4 defaults 0 0",
    "",
  ].join("\n"));
  fs.mkdirSync(path.join(tree, "boot/efi"), { recursive: true });
  fs.mkdirSync(path.join(tree, "data"), { recursive: true });
  write(path.join(tree, "etc/systemd/network/20-wired.network"), "[Match]\nName=en* eth*\n\n[Network]\nDHCP=yes\n");
  // the journal on the serial console: the run's log shows what the agent and RAUC said
  write(path.join(tree, "etc/systemd/journald.conf.d/console.conf"), "[Journal]\nForwardToConsole=yes\nTTYPath=/dev/ttyS0\nMaxLevelConsole=info\n");

  write(path.join(tree, "etc/rauc/system.conf"), [
    "[system]",
    `compatible=${COMPATIBLE}`,
    "bootloader=grub",
    "grubenv=/boot/efi/grub/grubenv",
    "data-directory=/data/rauc",
    // built on the host, whose kernel has no device mapper for verity bundles (the guest's has)
    "bundle-formats=plain",
    "",
    "[keyring]",
    "path=/etc/rauc/keyring.pem",
    "",
    "[slot.rootfs.0]",
    "device=/dev/vdb",
    "type=ext4",
    "bootname=A",
    "",
    "[slot.rootfs.1]",
    "device=/dev/vdc",
    "type=ext4",
    "bootname=B",
    "",
  ].join("\n"));
  write(path.join(tree, "etc/rauc/keyring.pem"), keyringPem);
  // the bundle server's self-signed certificate (https://10.0.2.2:<port>), trusted by the agent's Node
  write(path.join(tree, "etc/fleet-agent/bundle-server.pem"), bundleServerCertPem);

  // the agent's unit: agent/systemd/fleet-agent.service with the state on the data disk (the root
  // slot is replaced by an update) and enrollment on the first start with the run's token
  write(path.join(tree, "etc/systemd/system/fleet-agent.service"), [
    "[Unit]",
    "Description=Fleet agent",
    "Wants=network-online.target",
    "After=network-online.target data.mount boot-efi.mount",
    "RequiresMountsFor=/data /boot/efi",
    "",
    "[Service]",
    "Type=exec",
    "EnvironmentFile=/data/fleet-enroll.env",
    "Environment=FLEET_AGENT_HEALTH_DIR=/etc/fleet-agent/health.d",
    "Environment=NODE_EXTRA_CA_CERTS=/etc/fleet-agent/bundle-server.pem",
    `ExecStartPre=/bin/sh -c 'test -e /data/fleet-agent/identity.json || /usr/local/bin/fleet-agent enroll --url "$FLEET_URL" --token "$FLEET_TOKEN" --device-id "$FLEET_DEVICE_ID" --state-dir /data/fleet-agent'`,
    "ExecStart=/usr/local/bin/fleet-agent run --state-dir /data/fleet-agent --engine podman",
    "Restart=always",
    "RestartSec=5",
    "RestartPreventExitStatus=78",
    "KillMode=mixed",
    "TimeoutStopSec=60",
    "SyslogIdentifier=fleet-agent",
    "",
    "[Install]",
    "WantedBy=multi-user.target",
    "",
  ].join("\n"));
  sh("systemctl", [`--root=${tree}`, "enable", "systemd-networkd.service", "systemd-networkd-wait-online.service", "fleet-agent.service"]);
}

/** Sets the version marker (and a failing health check for a bad version) in `tree`. */
export function markVersion(tree: string, version: string, opts: { failingHealthCheck?: boolean } = {}): void {
  write(path.join(tree, "etc/fleet-os-version"), `${version}\n`);
  const check = path.join(tree, "etc/fleet-agent/health.d/10-e2e-broken");
  if (opts.failingHealthCheck) write(check, "#!/bin/sh\necho 'this system image is broken on purpose (fleet e2e)' >&2\nexit 1\n", 0o755);
  else fs.rmSync(check, { force: true });
}

/** A whole-disk ext4 image of `bytes` made from `tree`. */
export function ext4Image(tree: string, file: string, bytes: number, label?: string): void {
  fs.rmSync(file, { force: true });
  fs.writeFileSync(file, Buffer.alloc(0));
  fs.truncateSync(file, bytes);
  sh("mkfs.ext4", ["-q", ...(label ? ["-L", label] : []), "-d", tree, file]);
}

/** How many bytes a slot needs for `tree`: its size and a third more, rounded to 64 MiB. */
export function slotBytes(tree: string): number {
  const kib = Number(sh("du", ["-sk", "--apparent-size", tree]).split(/\s/)[0]);
  const mib = Math.ceil((kib / 1024) * 1.35 / 64) * 64;
  return mib * 1024 * 1024;
}

const ESP_OFFSET = 1024 * 1024;
const ESP_FAT_BYTES = 60 * 1024 * 1024;

/** The ESP disk: GPT, one FAT partition from 1 MiB holding EFI/BOOT/BOOTX64.EFI and grub/grubenv. */
export function espImage(file: string, work: string): void {
  const efi = path.join(work, "BOOTX64.EFI");
  sh("grub-mkstandalone", ["-O", "x86_64-efi", "-o", efi, "--modules=part_gpt fat ext2 linux loadenv test echo reboot sleep serial terminal",
    "--locales=", "--fonts=", `boot/grub/grub.cfg=${path.join(HERE, "grub.cfg")}`]);
  const env = path.join(work, "grubenv");
  fs.rmSync(env, { force: true });
  // slot A holds the first system and is good; slot B is empty until the first update
  sh("grub-editenv", [env, "create"]);
  sh("grub-editenv", [env, "set", "ORDER=A B", "A_OK=1", "A_TRY=0", "B_OK=0", "B_TRY=0"]);
  // the FAT file system is made in a file of the partition's exact size, then put at its offset
  const fat = path.join(work, "esp-fat.img");
  fs.rmSync(fat, { force: true });
  fs.writeFileSync(fat, Buffer.alloc(0));
  fs.truncateSync(fat, ESP_FAT_BYTES);
  sh("mformat", ["-i", fat, "-v", "ESP", "::"]);
  sh("mmd", ["-i", fat, "::/EFI", "::/EFI/BOOT", "::/grub"]);
  sh("mcopy", ["-i", fat, efi, "::/EFI/BOOT/BOOTX64.EFI"]);
  sh("mcopy", ["-i", fat, env, "::/grub/grubenv"]);
  fs.rmSync(file, { force: true });
  fs.writeFileSync(file, Buffer.alloc(0));
  fs.truncateSync(file, ESP_OFFSET + ESP_FAT_BYTES + 1024 * 1024);
  sh("sgdisk", ["-n", `1:${ESP_OFFSET / 512}:${(ESP_OFFSET + ESP_FAT_BYTES) / 512 - 1}`, "-t", "1:ef00", "-c", "1:ESP", file]);
  const fd = fs.openSync(file, "r+");
  const bytes = fs.readFileSync(fat);
  fs.writeSync(fd, bytes, 0, bytes.length, ESP_OFFSET);
  fs.closeSync(fd);
  fs.rmSync(fat);
}

/** Reads the grubenv back from the ESP image (the host's view of the guest's boot selection). */
export function readGrubenv(file: string, work: string): Record<string, string> {
  const out = path.join(work, "grubenv.read");
  fs.rmSync(out, { force: true });
  sh("mcopy", ["-i", `${file}@@1M`, "::/grub/grubenv", out]);
  const vars: Record<string, string> = {};
  for (const line of fs.readFileSync(out, "utf8").split("\n")) {
    const m = /^([A-Z_]+)=(.*)$/.exec(line);
    if (m) vars[m[1]] = m[2];
  }
  return vars;
}

/** The data disk: the agent's enrollment settings; its state directory is made at the first start. */
export function dataImage(file: string, work: string, settings: GuestSettings): void {
  const tree = path.join(work, "data-tree");
  fs.rmSync(tree, { recursive: true, force: true });
  fs.mkdirSync(path.join(tree, "rauc"), { recursive: true });
  write(path.join(tree, "fleet-enroll.env"), `FLEET_URL=${settings.serviceUrl}\nFLEET_TOKEN=${settings.enrollmentToken}\nFLEET_DEVICE_ID=${settings.deviceId}\n`, 0o600);
  ext4Image(tree, file, 3 * 1024 * 1024 * 1024, "fleetdata");
}

export interface Signer { caCert: string; cert: string; key: string }

/** A test update CA and a signing certificate it issued (what a build host signs bundles with). */
export function makeSigner(dir: string): Signer {
  const caCert = path.join(dir, "update-ca.pem");
  const caKey = path.join(dir, "update-ca.key");
  sh("openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", caKey, "-out", caCert,
    "-days", "30", "-subj", "/CN=Fleet E2E Update CA", "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign"]);
  const key = path.join(dir, "signer.key");
  const csr = path.join(dir, "signer.csr");
  const cert = path.join(dir, "signer.pem");
  const ext = path.join(dir, "signer.ext");
  fs.writeFileSync(ext, "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\n");
  sh("openssl", ["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key, "-out", csr, "-subj", "/CN=Fleet E2E Signer"]);
  sh("openssl", ["x509", "-req", "-in", csr, "-CA", caCert, "-CAkey", caKey, "-CAcreateserial", "-out", cert, "-days", "30", "-extfile", ext]);
  return { caCert, cert, key };
}

export interface Bundle { file: string; sha256: string; version: string }

/** A plain RAUC bundle of one slot image, signed by `signer`. */
export function makeBundle(work: string, signer: Signer, image: string, version: string): Bundle {
  const content = path.join(work, `bundle-${version}`);
  fs.rmSync(content, { recursive: true, force: true });
  fs.mkdirSync(content, { recursive: true });
  fs.renameSync(image, path.join(content, "rootfs.ext4"));
  fs.writeFileSync(path.join(content, "manifest.raucm"),
    `[update]\ncompatible=${COMPATIBLE}\nversion=${version}\n\n[bundle]\nformat=plain\n\n[image.rootfs]\nfilename=rootfs.ext4\n`);
  const file = path.join(work, `fleet-vm-${version}.raucb`);
  fs.rmSync(file, { force: true });
  // zstd: quicker to build than mksquashfs's default, and to unpack in an emulated guest
  sh("rauc", ["bundle", `--cert=${signer.cert}`, `--key=${signer.key}`, "--mksquashfs-args=-comp zstd -Xcompression-level 3", content, file]);
  fs.rmSync(content, { recursive: true, force: true });
  return { file, sha256: sha256Of(file), version };
}
