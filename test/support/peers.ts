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

export type Peer = "docker-registry" | "htpasswd" | "chromium";

/** The Debian package that installs each peer. */
export const PEER_PACKAGES: Record<Peer, string> = {
  "docker-registry": "docker-registry",
  htpasswd: "apache2-utils",
  chromium: "chromium",
};

function executable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function onPath(command: string): string | null {
  for (const dir of (process.env.PATH ?? "").split(path.delimiter)) {
    if (dir && executable(path.join(dir, command))) return path.join(dir, command);
  }
  return null;
}

/** Where a peer's program is, or null when this machine lacks it. Chromium: CHROMIUM_PATH, else /usr/bin/chromium, else on PATH. */
export function peerPath(peer: Peer): string | null {
  if (peer === "chromium") {
    const configured = process.env.CHROMIUM_PATH;
    if (configured) return executable(configured) ? configured : null;
    return executable("/usr/bin/chromium") ? "/usr/bin/chromium" : onPath("chromium");
  }
  return onPath(peer);
}

export function peerAvailable(peer: Peer): boolean {
  return peerPath(peer) !== null;
}

/** Every listed peer is here (for `describe.skipIf(!peersAvailable(...))`). */
export function peersAvailable(...peers: Peer[]): boolean {
  return peers.every(peerAvailable);
}

export function missingPeers(): Peer[] {
  return (Object.keys(PEER_PACKAGES) as Peer[]).filter((peer) => !peerAvailable(peer));
}
