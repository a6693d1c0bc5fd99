// System programs some suites run as real peers (an OCI registry, Chromium). A newcomer's
// `npm test` on a machine without them skips those suites, with one line per missing peer
// naming the Debian package that brings it (printed once, by test/support/global-setup.ts);
// `bash .ci/run` installs them all and sets CI_REQUIRE_PEERS=1, under which a missing peer
// fails the run instead of skipping anything.
//
// PostgreSQL is not in this list: the suite runs on PGlite by default and, with DATABASE_URL,
// on a PostgreSQL server (.ci/run starts one); the suites that need it check DATABASE_URL.
import { accessSync, constants } from "node:fs";
import path from "node:path";

export type Peer = "docker-registry" | "htpasswd" | "chromium" | "podman" | "tmux" | "dockerd" | "mmdebstrap" | "systemd-analyze" | "swtpm" | "rauc";

/** The Debian package that installs each peer. */
export const PEER_PACKAGES: Record<Peer, string> = {
  "docker-registry": "docker-registry",
  htpasswd: "apache2-utils",
  // Chromium's headless shell (the old headless mode, as Playwright itself runs headless): the
  // same Blink as the browser, at about 60 % of the full browser's CPU per test file.
  chromium: "chromium-headless-shell",
  // One word-split list: .ci/run passes it to apt-get install as it is.
  podman: "podman runc podman-compose busybox-static",
  tmux: "tmux",
  // Docker's daemon and Compose v1 (Debian 12 has no compose plugin); the tests start their own daemon (test/support/docker.ts)
  dockerd: "docker.io docker-compose",
  // Debian's minimal root file system for the deploy tests' local images (test/deploy/base-image.ts, stand-in-images.ts)
  mmdebstrap: "mmdebstrap",
  "systemd-analyze": "systemd",
  // a software TPM 2.0 (swtpm_setup manufactures it with an EK certificate from a test CA) and the TCG's command line tools
  swtpm: "swtpm swtpm-tools tpm2-tools",
  // RAUC (its service on a D-Bus daemon of the test's own), mkfs.ext4 and mksquashfs for the slots and bundles
  rauc: "rauc dbus-daemon e2fsprogs squashfs-tools",
};

/** The tests that skip without each peer (what a newcomer's run leaves out). */
const PEER_USERS: Record<Peer, string> = {
  "docker-registry": "the OCI registry tests (registries, marketplace sync)",
  htpasswd: "the OCI registry tests with BASIC authentication",
  chromium: "the console's browser tests",
  podman: "the fleet agent's container tests",
  tmux: "the fleet CLI's terminal test (fleet rollout watch)",
  dockerd: "the fleet agent's end-to-end test on Docker, the compose file's check (test/deploy/compose.test.ts)",
  mmdebstrap: "the tests that build and run the container image (test/deploy/container-image.test.ts, compose-up.test.ts, the kube play of kubernetes.test.ts)",
  "systemd-analyze": "the systemd unit's check (test/deploy/systemd-unit.test.ts)",
  swtpm: "the TPM-held device key tests (test/http/admission/tpm.test.ts)",
  rauc: "the OS update tests on loop devices (test/agent/os-update/rauc.test.ts)",
};

function executable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** Where a program is on PATH, or null. */
export function onPath(command: string): string | null {
  for (const dir of (process.env.PATH ?? "").split(path.delimiter)) {
    if (dir && executable(path.join(dir, command))) return path.join(dir, command);
  }
  return null;
}

/**
 * Where a peer's program is, or null when this machine lacks it. Chromium: CHROMIUM_PATH, else
 * Debian's headless shell, else the full browser (either in /usr/bin or on PATH).
 */
export function peerPath(peer: Peer): string | null {
  if (peer === "chromium") {
    const configured = process.env.CHROMIUM_PATH;
    if (configured) return executable(configured) ? configured : null;
    for (const program of ["chromium-headless-shell", "chromium"]) {
      const found = executable(`/usr/bin/${program}`) ? `/usr/bin/${program}` : onPath(program);
      if (found) return found;
    }
    return null;
  }
  // The agent's container tests need the engine, its compose program and busybox (their image).
  if (peer === "podman") return onPath("podman-compose") && onPath("busybox") ? onPath("podman") : null;
  // Docker: the daemon, the client and a compose program (docker-compose; a compose plugin is not looked for here)
  if (peer === "dockerd") return onPath("docker") && onPath("docker-compose") ? onPath("dockerd") : null;
  // the TPM tests need the TPM, its manufacturing tool and tpm2-tools (what the agent runs)
  if (peer === "swtpm") return onPath("swtpm_setup") && onPath("tpm2_createprimary") ? onPath("swtpm") : null;
  // RAUC's service needs a bus (the tests start their own dbus-daemon); bundles need mksquashfs, slots mkfs.ext4 and losetup
  if (peer === "rauc") return onPath("dbus-daemon") && onPath("mksquashfs") && onPath("mkfs.ext4") && onPath("losetup") ? onPath("rauc") : null;
  return onPath(peer);
}

export function peerAvailable(peer: Peer): boolean {
  return peerPath(peer) !== null;
}

/** The peer's program for a test that starts it; a test that forgot to skip without it fails with the line saying how to install it. */
export function requirePeer(peer: Peer): string {
  const program = peerPath(peer);
  if (!program) throw new Error(`this test needs ${peer} and does not skip without it (describe.skipIf(!peersAvailable(...))): ${missingPeerLine(peer)}`);
  return program;
}

/** Every listed peer is here (for `describe.skipIf(!peersAvailable(...))`). */
export function peersAvailable(...peers: Peer[]): boolean {
  return peers.every(peerAvailable);
}

export function missingPeers(): Peer[] {
  return (Object.keys(PEER_PACKAGES) as Peer[]).filter((peer) => !peerAvailable(peer));
}

/** The one line said about a missing peer: what skips without it and the Debian package that brings it. */
export function missingPeerLine(peer: Peer): string {
  const where = peer === "chromium" && process.env.CHROMIUM_PATH ? ` at CHROMIUM_PATH=${process.env.CHROMIUM_PATH}` : "";
  return `${peer} not found${where}: ${PEER_USERS[peer]} skip. Install Debian's ${PEER_PACKAGES[peer]} (apt-get install ${PEER_PACKAGES[peer]}), or run \`bash .ci/run\`, which installs every peer.`;
}

/** Said when DATABASE_URL is unset: the PostgreSQL-only suites skip by design on the PGlite run. */
export const POSTGRES_ONLY_LINE =
  "DATABASE_URL not set: the PostgreSQL-only tests skip (they need a PostgreSQL server, Debian's postgresql); `bash .ci/run` starts a throwaway one and runs the suite on it too.";

/**
 * What test/support/global-setup.ts prints once per run: a line per missing peer, and one when
 * DATABASE_URL is unset. Under CI_REQUIRE_PEERS=1 (set by .ci/run, which installs every peer)
 * a missing peer throws instead: CI must never pass by skipping a suite for want of one.
 */
export function peerNotices(): string[] {
  const missing = missingPeers().map(missingPeerLine);
  if (missing.length && process.env.CI_REQUIRE_PEERS === "1") {
    throw new Error(`CI_REQUIRE_PEERS=1 and a test peer is missing:\n${missing.join("\n")}`);
  }
  return process.env.DATABASE_URL ? missing : [...missing, POSTGRES_ONLY_LINE];
}
