// The service's image as the deploy tests run it: the repository's Containerfile built with
// Podman on the local base (test/deploy/base-image.ts: no image can be pulled here), under one
// tag. Every deploy test file that runs the image builds it through here: the first build of a
// run does the work, the others find every layer in Podman's cache (the layers are keyed by
// the build context's content), so a run builds the image once.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { withDirLock } from "../../scripts/dir-lock.js";
import { ROOT } from "../support/server-process.js";
import { ensureBaseImage } from "./base-image.js";

/** The image under test: one tag, so that the next run's build reuses this one's layers. */
export const SERVICE_IMAGE = "localhost/fleet-manager:test";

/** Podman's settings for the deploy tests: runc (crun refuses this kernel's hybrid cgroups) and ulimits within the sandbox's, as test/support/podman.ts. */
export function writeContainersConf(dir: string): NodeJS.ProcessEnv {
  const file = path.join(dir, "containers.conf");
  fs.writeFileSync(file, '[containers]\ndefault_ulimits = ["nofile=20000:20000", "nproc=4096:4096"]\n[engine]\nruntime = "runc"\n');
  return { ...process.env, CONTAINERS_CONF: file };
}

/**
 * One image build at a time on this machine: the deploy test files are among the longest, so the
 * sequencer starts them together, and two builds at once would each do the whole work (and two
 * mmdebstrap runs would write the same cache file). The second waits and finds Podman's cache.
 */
const BUILD_LOCK = path.join(os.tmpdir(), "fleet-image-build.lock");
export const oneBuildAtATime = <T>(work: () => Promise<T>): Promise<T> => withDirLock(BUILD_LOCK, 45 * 60_000, work);

/** Builds SERVICE_IMAGE (a no-op on Podman's cache when nothing changed); how long it took and whether the base was made first. */
export function buildServiceImage(podman: PodmanCall): Promise<{ seconds: number; baseMade: boolean }> {
  return oneBuildAtATime(() => buildUnlocked(podman));
}

type PodmanCall = (args: string[], timeout?: number) => Promise<string>;

/**
 * `podman build`, once more when it meets Buildah's cache-lookup race: a build lists the local
 * images to find a cached step, and another test removing an image of its own between the listing
 * and the lookup fails the build with "getting top layer info: layer not known" (seen in a
 * clean-clone run; containers/buildah#5615, fixed upstream in 1.43 by ignoring the vanished
 * layer, which Debian's Podman does not have yet). A second lookup no longer lists that image.
 */
export async function podmanBuild(podman: PodmanCall, args: string[], timeout: number): Promise<string> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await podman(["build", ...args], timeout);
    } catch (err) {
      if (attempt >= 3 || !/layer not known/.test(String((err as Error).message))) throw err;
    }
  }
}

async function buildUnlocked(podman: PodmanCall): Promise<{ seconds: number; baseMade: boolean }> {
  const base = await ensureBaseImage((args) => podman(args, 20 * 60_000));
  const started = Date.now();
  // A network whose egress re-signs TLS (this machine's: Node trusts its CA through
  // NODE_EXTRA_CA_CERTS) reaches the npm registry with that CA as the build's secret.
  const ca = process.env.NODE_EXTRA_CA_CERTS;
  await podmanBuild(podman, [
    "--quiet", "--format", "docker", "--build-arg", `BASE_IMAGE=${base.ref}`,
    ...(ca && fs.existsSync(ca) ? ["--secret", `id=ca_certificates,src=${ca}`] : []),
    "--tag", SERVICE_IMAGE, "--file", path.join(ROOT, "Containerfile"), ROOT,
  ], 20 * 60_000);
  return { seconds: Math.round((Date.now() - started) / 1000), baseMade: base.made };
}
