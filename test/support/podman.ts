// Real Podman for the fleet agent's container tests (docs in ../shared/design/agent.md):
// * containers.conf: runc (crun refuses this kernel's hybrid cgroups) and nofile/nproc ulimits
//   within the sandbox's hard limits; registries.conf: the local registry is plain HTTP. Both
//   reach the engine only through the environment (CONTAINERS_CONF,
//   CONTAINERS_REGISTRIES_CONF) that `env` holds: the agent's code never names them.
// * no image can be downloaded here: a busybox image is made once per test file from the
//   busybox-static binary (podman import of a root file system) and pushed into a local
//   registry (Debian's docker-registry, test/support/oci-registry.ts) on loopback, so that a
//   compose `pull` really pulls.
// Tests that use it skip without the peers: describe.skipIf(!peersAvailable("podman", "docker-registry")).
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { copyFile, mkdir, mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { startOciRegistry, type OciRegistryServer } from "./oci-registry.js";
import { onPath, requirePeer } from "./peers.js";

const run = promisify(execFile);

/** The busybox applets the test image links (httpd serves pages, wget checks health). */
const APPLETS = ["sh", "echo", "sleep", "cat", "httpd", "ls", "wget", "true", "false", "date"];

export interface PodmanHarness {
  /** for the engine: CONTAINERS_CONF and CONTAINERS_REGISTRIES_CONF */
  env: Record<string, string>;
  registry: OciRegistryServer;
  /** the busybox image in the local registry, e.g. 127.0.0.1:PORT/fleet-test/busybox:1 */
  image: string;
  /** an image reference in the local registry that does not exist */
  missingImage: string;
  /** a temporary directory for the test's compose projects (removed by close) */
  dir: string;
  /** podman with the harness's environment (for assertions: `podman ps -a ...`) */
  podman(args: string[]): Promise<string>;
  close(): Promise<void>;
}

export async function startPodmanHarness(): Promise<PodmanHarness> {
  const podmanProgram = requirePeer("podman");
  const dir = await mkdtemp(path.join(os.tmpdir(), "podman-harness-"));
  const registry = await startOciRegistry();
  const host = new URL(registry.url).host;
  await writeFile(
    path.join(dir, "containers.conf"),
    '[containers]\ndefault_ulimits = ["nofile=20000:20000", "nproc=4096:4096"]\n[engine]\nruntime = "runc"\n',
  );
  await writeFile(path.join(dir, "registries.conf"), `[[registry]]\nlocation = "${host}"\ninsecure = true\n`);
  const env = { CONTAINERS_CONF: path.join(dir, "containers.conf"), CONTAINERS_REGISTRIES_CONF: path.join(dir, "registries.conf") };
  const podman = async (args: string[]) => (await run(podmanProgram, args, { env: { ...process.env, ...env }, timeout: 60_000 })).stdout;

  // The root file system: /bin/busybox and its applets as links.
  const root = path.join(dir, "rootfs");
  await mkdir(path.join(root, "bin"), { recursive: true });
  await mkdir(path.join(root, "tmp"));
  // busybox-static: one binary that needs no library in the image (peerPath("podman") checked it is on PATH).
  await copyFile(onPath("busybox")!, path.join(root, "bin", "busybox"));
  for (const applet of APPLETS) await symlink("busybox", path.join(root, "bin", applet));
  await run("tar", ["-C", root, "-cf", path.join(dir, "rootfs.tar"), "."]);
  const suffix = randomBytes(4).toString("hex");
  const localTag = `localhost/fleet-test-busybox:${suffix}`;
  const image = `${host}/fleet-test/busybox:1`;
  await podman(["import", "--quiet", path.join(dir, "rootfs.tar"), localTag]);
  await podman(["push", "--quiet", "--tls-verify=false", localTag, image]);
  // Only the registry holds it now under its registry name: a compose pull really pulls.
  await podman(["rmi", "--force", localTag]);

  return {
    env,
    registry,
    image,
    missingImage: `${host}/fleet-test/nothing-here:1`,
    dir,
    podman,
    close: async () => {
      await podman(["rmi", "--force", "--ignore", image]).catch(() => undefined);
      await registry.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
