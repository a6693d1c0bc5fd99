// The base image the container test builds the Containerfile on (BASE_IMAGE). No image can be
// pulled on the test machines, so the stand-in for the official node:20-bookworm-slim is made
// here from what the machine has: Debian bookworm's minimal root file system (mmdebstrap,
// variant minbase, from Debian's mirror) plus the Node.js that runs this test and its npm, where
// the official image has them (/usr/local/bin/node, /usr/local/lib/node_modules/npm).
//
// Made once per machine: the image is tagged with a key of everything it is made from (Node's
// and npm's versions, the Debian suite and variant, this recipe's version), so a second run
// finds it in Podman's storage; the Debian root file system (the slow part: minutes of
// downloads) is also kept under /var/tmp by the same key, should the image be removed.
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

/** What the base is made from; change RECIPE when the way it is made changes. */
const RECIPE = "1";
const SUITE = "bookworm";
const MIRROR = "http://deb.debian.org/debian";
const CACHE_DIR = "/var/tmp/fleet-container-base";

function npmDir(): string {
  // Debian's and nodesource's node: /usr/bin/node and /usr/lib/node_modules/npm; the official
  // tarball's: bin/node and lib/node_modules/npm beside it. Both are ../lib from the binary.
  return path.resolve(path.dirname(fs.realpathSync(process.execPath)), "..", "lib", "node_modules", "npm");
}

export function baseImageKey(): string {
  const npmVersion = JSON.parse(fs.readFileSync(path.join(npmDir(), "package.json"), "utf8")).version as string;
  const material = JSON.stringify({ RECIPE, SUITE, variant: "minbase", node: process.version, arch: process.arch, npm: npmVersion });
  return createHash("sha256").update(material).digest("hex").slice(0, 16);
}

export interface BaseImage {
  /** the image reference to pass as BASE_IMAGE */
  ref: string;
  /** whether this call made it (false: found from an earlier run) */
  made: boolean;
}

/** The local base image, made when this machine has none of this key yet; `podman` runs the engine. */
export async function ensureBaseImage(podman: (args: string[]) => Promise<string>): Promise<BaseImage> {
  const key = baseImageKey();
  const ref = `localhost/fleet-test-base:${key}`;
  const exists = await podman(["image", "exists", ref]).then(() => true, () => false);
  if (exists) return { ref, made: false };

  const debian = await debianRootfs(`minbase-${key}`);

  // Node and npm added to a copy of the Debian tar, as the official image lays them out.
  const work = fs.mkdtempSync(path.join(os.tmpdir(), "fleet-base-"));
  try {
    const stage = path.join(work, "stage");
    fs.mkdirSync(path.join(stage, "usr/local/bin"), { recursive: true });
    fs.mkdirSync(path.join(stage, "usr/local/lib/node_modules"), { recursive: true });
    fs.copyFileSync(process.execPath, path.join(stage, "usr/local/bin/node"));
    fs.chmodSync(path.join(stage, "usr/local/bin/node"), 0o755);
    fs.cpSync(npmDir(), path.join(stage, "usr/local/lib/node_modules/npm"), { recursive: true, verbatimSymlinks: true });
    fs.symlinkSync("../lib/node_modules/npm/bin/npm-cli.js", path.join(stage, "usr/local/bin/npm"));
    fs.symlinkSync("../lib/node_modules/npm/bin/npx-cli.js", path.join(stage, "usr/local/bin/npx"));
    await importRootfs(podman, debian, stage, ["./usr/local/bin/node", "./usr/local/bin/npm", "./usr/local/bin/npx", "./usr/local/lib/node_modules"], [
      "ENV=PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
      'CMD=["node"]',
    ], ref);
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
  return { ref, made: true };
}

/**
 * Debian bookworm's minimal root file system as a tar (mmdebstrap, variant minbase, from Debian's
 * mirror), with `packages`, kept under /var/tmp as `debian-bookworm-NAME.tar` (NAME carries the
 * caller's key of what goes in): made once per machine, the slow part (minutes of downloads).
 */
export async function debianRootfs(name: string, packages: string[] = [], hooks: string[] = []): Promise<string> {
  fs.mkdirSync(CACHE_DIR, { recursive: true });
  const debian = path.join(CACHE_DIR, `debian-${SUITE}-${name}.tar`);
  if (fs.existsSync(debian)) return debian;
  const partial = `${debian}.partial`;
  await run("mmdebstrap", [
    // a tar whatever the file's name (auto, mmdebstrap's default, takes ".partial" for a folder)
    "--variant=minbase", "--format=tar", "--quiet", ...(packages.length ? [`--include=${packages.join(",")}`] : []),
    // what a runtime image does without (the official slim images drop them too)
    "--dpkgopt=path-exclude=/usr/share/man/*", "--dpkgopt=path-exclude=/usr/share/doc/*", "--dpkgopt=path-exclude=/usr/share/locale/*",
    ...hooks.map((hook) => `--customize-hook=${hook}`),
    SUITE, partial, MIRROR,
  ], {
    timeout: 20 * 60_000, maxBuffer: 16 * 1024 * 1024,
    // its work folder on disk: the tests' TMPDIR may be /dev/shm, where mmdebstrap's chroot
    // finds no dpkg (seen here: "chroot: failed to run command 'dpkg'")
    env: { ...process.env, TMPDIR: "/var/tmp" },
  });
  fs.renameSync(partial, debian);
  return debian;
}

/**
 * Imports a copy of the Debian tar `rootfs` with `entries` of the folder `stage` appended as image
 * `ref`, with Dockerfile instructions (`changes`, e.g. `CMD=["node"]`). The entries are named as
 * mmdebstrap names its own (./usr/...), and none may be a folder the Debian tar already holds
 * (usr/local/bin): the import refuses a path twice.
 */
export async function importRootfs(podman: (args: string[]) => Promise<string>, rootfs: string, stage: string, entries: string[], changes: string[], ref: string): Promise<void> {
  const tar = path.join(path.dirname(stage), "rootfs.tar");
  fs.copyFileSync(rootfs, tar);
  await run("tar", ["--append", "-f", tar, "-C", stage, "--owner=0", "--group=0", ...entries]);
  await podman(["import", "--quiet", ...changes.flatMap((change) => ["--change", change]), tar, ref]);
}
