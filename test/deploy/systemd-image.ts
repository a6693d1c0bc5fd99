// A machine with systemd for deploy/systemd/fleet-manager.service, made here because the test
// machines boot no systemd of their own: a container whose PID 1 is systemd (Podman's
// --systemd=always), from Debian bookworm's minimal root file system with systemd (mmdebstrap,
// as test/deploy/base-image.ts), the Node.js that runs this test at /usr/bin/node (where Debian's
// package puts it, which the unit starts), and the service laid out in /opt/fleet-manager as
// docs/install.md says: the assembled build, taken from the service's image (its /app is
// deploy/assemble.mjs's output), the unit installed and enabled.
//
// The Debian part is made once per machine (keyed like the base image, cached under /var/tmp);
// the service's part is a small build on top, redone from Podman's cache when the image changed.
import { createHash } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { ROOT } from "../support/server-process.js";
import { debianRootfs, importRootfs } from "./base-image.js";
import { oneBuildAtATime, podmanBuild, SERVICE_IMAGE } from "./service-image.js";

/** Change RECIPE when the way the root file system is made changes. */
const RECIPE = "1";
const SUITE = "bookworm";
const PACKAGES = ["systemd", "systemd-sysv", "dbus"];
export const UNIT_FILE = path.join(ROOT, "deploy", "systemd", "fleet-manager.service");
/** the image the test runs: systemd, Node and the service installed as on a VM */
export const SYSTEMD_IMAGE = "localhost/fleet-manager-systemd:test";

function key(): string {
  return createHash("sha256").update(JSON.stringify({ RECIPE, SUITE, variant: "minbase", PACKAGES, node: process.version, arch: process.arch })).digest("hex").slice(0, 16);
}

/** Builds SYSTEMD_IMAGE on SERVICE_IMAGE (which must be built first); `podman` runs the engine. */
export function buildSystemdImage(podman: (args: string[], timeout?: number) => Promise<string>): Promise<void> {
  return oneBuildAtATime(async () => {
    const base = await ensureSystemdBase(podman);
    const context = fs.mkdtempSync(path.join(os.tmpdir(), "fleet-systemd-image-"));
    try {
      fs.copyFileSync(UNIT_FILE, path.join(context, "fleet-manager.service"));
      fs.writeFileSync(path.join(context, "Containerfile"), [
        `FROM ${SERVICE_IMAGE} AS service`,
        `FROM ${base}`,
        // docs/install.md, "systemd": the assembled build in /opt/fleet-manager, the unit installed and enabled
        "COPY --from=service /app /opt/fleet-manager",
        "COPY fleet-manager.service /etc/systemd/system/fleet-manager.service",
        "RUN systemctl enable fleet-manager.service",
        "",
      ].join("\n"));
      await podmanBuild(podman, ["--quiet", "--format", "docker", "--tag", SYSTEMD_IMAGE, context], 10 * 60_000);
    } finally {
      fs.rmSync(context, { recursive: true, force: true });
    }
  });
}

async function ensureSystemdBase(podman: (args: string[], timeout?: number) => Promise<string>): Promise<string> {
  const ref = `localhost/fleet-test-systemd-base:${key()}`;
  if (await podman(["image", "exists", ref]).then(() => true, () => false)) return ref;
  const debian = await debianRootfs(`systemd-${key()}`, PACKAGES);
  const work = fs.mkdtempSync(path.join(os.tmpdir(), "fleet-systemd-base-"));
  try {
    const stage = path.join(work, "stage");
    fs.mkdirSync(path.join(stage, "usr/bin"), { recursive: true });
    fs.copyFileSync(process.execPath, path.join(stage, "usr/bin/node"));
    fs.chmodSync(path.join(stage, "usr/bin/node"), 0o755);
    // systemd as PID 1; SIGRTMIN+3 is its orderly shutdown
    await importRootfs(podman, debian, stage, ["./usr/bin/node"], ['CMD=["/sbin/init"]', "STOPSIGNAL=SIGRTMIN+3"], ref);
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
  return ref;
}
