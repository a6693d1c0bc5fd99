// Which system peers this machine has, and what the run says (or, in CI, refuses) without
// them: a PATH of our own holding a runnable docker-registry and an htpasswd that is not
// executable (what a bind-mounted /dev/null looks like), Chromium pointed elsewhere.
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { missingPeerLine, missingPeers, peerNotices, peerPath, peersAvailable, POSTGRES_ONLY_LINE, requirePeer } from "../support/peers.js";

let bin: string;
const program = (name: string, mode: number) => {
  const file = path.join(bin, name);
  writeFileSync(file, "#!/bin/sh\n");
  chmodSync(file, mode);
  return file;
};

beforeAll(() => {
  bin = mkdtempSync(path.join(os.tmpdir(), "peers-"));
  program("docker-registry", 0o755);
  program("htpasswd", 0o644);
  program("tmux", 0o755);
});
afterAll(() => rmSync(bin, { recursive: true, force: true }));
afterEach(() => vi.unstubAllEnvs());

/** Every peer this test's PATH lacks, in the order the run names them. */
const ALL_MISSING = ["htpasswd", "chromium", "podman", "dockerd", "mmdebstrap", "systemd-analyze", "swtpm", "rauc"] as const;

function machineWithout(extra: Record<string, string | undefined> = {}) {
  vi.stubEnv("PATH", bin);
  vi.stubEnv("CHROMIUM_PATH", path.join(bin, "no-chromium"));
  vi.stubEnv("CI_REQUIRE_PEERS", undefined);
  vi.stubEnv("DATABASE_URL", undefined);
  for (const [name, value] of Object.entries(extra)) vi.stubEnv(name, value);
}

describe("peers", () => {
  it("finds a peer only as an executable file: on PATH, Chromium at CHROMIUM_PATH", () => {
    machineWithout();
    expect(peerPath("docker-registry")).toBe(path.join(bin, "docker-registry"));
    expect(peerPath("htpasswd")).toBeNull();
    expect(missingPeers()).toEqual([...ALL_MISSING]);
    expect(peersAvailable("docker-registry")).toBe(true);
    expect(peersAvailable("docker-registry", "htpasswd")).toBe(false);
    vi.stubEnv("CHROMIUM_PATH", program("my-chromium", 0o755));
    expect(peerPath("chromium")).toBe(path.join(bin, "my-chromium"));
  });

  it("says one line per missing peer naming its Debian package and `bash .ci/run`, then the PostgreSQL line", () => {
    machineWithout();
    const lines = peerNotices();
    expect(lines).toEqual([...ALL_MISSING.map(missingPeerLine), POSTGRES_ONLY_LINE]);
    expect(lines[0]).toMatch(/^htpasswd not found: .*apt-get install apache2-utils.*`bash \.ci\/run`/);
    expect(lines[1]).toContain(`chromium not found at CHROMIUM_PATH=${path.join(bin, "no-chromium")}`);
    expect(lines[1]).toContain("apt-get install chromium");
    expect(POSTGRES_ONLY_LINE).toMatch(/DATABASE_URL not set.*postgresql.*`bash \.ci\/run`/);
    machineWithout({ DATABASE_URL: "postgresql://127.0.0.1/x" });
    expect(peerNotices()).toEqual(ALL_MISSING.map(missingPeerLine));
    expect(missingPeerLine("mmdebstrap")).toContain("apt-get install mmdebstrap");
    expect(missingPeerLine("systemd-analyze")).toContain("apt-get install systemd");
    expect(missingPeerLine("swtpm")).toContain("apt-get install swtpm swtpm-tools tpm2-tools");
    expect(missingPeerLine("rauc")).toContain("apt-get install rauc dbus-daemon e2fsprogs squashfs-tools");
  });

  it("under CI_REQUIRE_PEERS=1 fails with the same lines when a peer is missing, and is quiet when none is", () => {
    machineWithout({ CI_REQUIRE_PEERS: "1" });
    expect(() => peerNotices()).toThrow(`CI_REQUIRE_PEERS=1 and a test peer is missing:\n${ALL_MISSING.map(missingPeerLine).join("\n")}`);
    program("htpasswd", 0o755);
    try {
      // podman counts only with its compose program and busybox (the test image) beside it.
      program("podman", 0o755);
      program("podman-compose", 0o755);
      expect(peerPath("podman")).toBeNull();
      program("busybox", 0o755);
      expect(peerPath("podman")).toBe(path.join(bin, "podman"));
      // dockerd counts only with the docker client and docker-compose beside it.
      program("dockerd", 0o755);
      program("docker", 0o755);
      expect(peerPath("dockerd")).toBeNull();
      program("docker-compose", 0o755);
      expect(peerPath("dockerd")).toBe(path.join(bin, "dockerd"));
      // the container image and systemd unit checks (test/deploy)
      program("mmdebstrap", 0o755);
      program("systemd-analyze", 0o755);
      // the TPM tests: swtpm counts only with swtpm_setup and tpm2-tools beside it
      program("swtpm", 0o755);
      expect(peerPath("swtpm")).toBeNull();
      program("swtpm_setup", 0o755);
      program("tpm2_createprimary", 0o755);
      expect(peerPath("swtpm")).toBe(path.join(bin, "swtpm"));
      // the OS update tests: rauc counts only with a dbus-daemon for its service, mksquashfs, mkfs.ext4 and losetup beside it
      program("rauc", 0o755);
      expect(peerPath("rauc")).toBeNull();
      for (const tool of ["dbus-daemon", "mksquashfs", "mkfs.ext4", "losetup"]) program(tool, 0o755);
      expect(peerPath("rauc")).toBe(path.join(bin, "rauc"));
      vi.stubEnv("CHROMIUM_PATH", program("chromium", 0o755));
      vi.stubEnv("DATABASE_URL", "postgresql://127.0.0.1/x");
      expect(peerNotices()).toEqual([]);
    } finally {
      program("htpasswd", 0o644);
    }
  });

  it("refuses to start a missing peer with the line, instead of an unhandled spawn ENOENT", () => {
    machineWithout();
    expect(requirePeer("docker-registry")).toBe(path.join(bin, "docker-registry"));
    expect(() => requirePeer("htpasswd")).toThrow(missingPeerLine("htpasswd"));
  });
});
