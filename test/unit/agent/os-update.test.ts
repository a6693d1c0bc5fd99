// The OS update driver's pure parts and its download (agent/src/os-update): RAUC 1.8's status
// JSON and messages as rauc printed them on this machine (test/agent/os-update/rauc.test.ts runs
// the real thing), and the resumable download against an HTTP server on loopback.
import crypto from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DownloadError, downloadResumable } from "../../../agent/src/os-update/download.js";
import { parseRaucStatus, raucMessage } from "../../../agent/src/os-update/rauc.js";
import { OsUpdater, targetProblem } from "../../../agent/src/os-update/updater.js";
import type { Rauc, RaucStatus } from "../../../agent/src/os-update/rauc.js";
import { runHealthDir } from "../../../agent/src/os-update/health-dir.js";
import { StateDir } from "../../../agent/src/state-dir.js";

describe("RAUC's words", () => {
  it("parses `rauc status --detailed --output-format=json` (1.8): booted slot, primary, each slot's version and image digest", () => {
    const status = parseRaucStatus(JSON.stringify({
      compatible: "fleet-test-board", variant: "", booted: "A", boot_primary: "rootfs.1",
      slots: [
        { "rootfs.1": { class: "rootfs", device: "/dev/loop1", type: "ext4", bootname: "B", state: "inactive", parent: null, mountpoint: null, boot_status: "good",
          slot_status: { bundle: { compatible: "fleet-test-board", version: "2.0.0" }, checksum: { sha256: "09da".padEnd(64, "0"), size: 4194304 }, installed: { timestamp: "2026-12-07T18:04:04Z", count: 1 }, status: "ok" } } },
        { "rootfs.0": { class: "rootfs", device: "/dev/loop0", type: "ext4", bootname: "A", state: "booted", parent: null, mountpoint: null, boot_status: "good" } },
      ],
    }));
    expect(status).toEqual({
      compatible: "fleet-test-board", booted: "A", bootPrimary: "rootfs.1",
      slots: [
        { name: "rootfs.0", bootname: "A", device: "/dev/loop0", state: "booted", bootStatus: "good", version: null, imageSha256: null, installedAt: null },
        { name: "rootfs.1", bootname: "B", device: "/dev/loop1", state: "inactive", bootStatus: "good", version: "2.0.0", imageSha256: "09da".padEnd(64, "0"), installedAt: "2026-12-07T18:04:04Z" },
      ],
    });
  });

  it("takes the LastError line of a refused install, else the last lines without progress and log noise", () => {
    expect(raucMessage("installing\n  0% Installing\n 20% Checking bundle\n100% Installing failed.\nLastError: signature verification failed: Verify error: self-signed certificate\nInstalling `/x.raucb` failed\n"))
      .toBe("signature verification failed: Verify error: self-signed certificate");
    expect(raucMessage("rauc-Message: 18:16:40.367: Using central status file /d/central.raucs\nFailed GDBus.Error:org.gtk.GDBus.UnmappedGError.Quark._g_2dio_2derror_2dquark.Code30: Already processing a different method\nD-Bus error while installing `/x.raucb`\n"))
      .toBe("Failed GDBus.Error:org.gtk.GDBus.UnmappedGError.Quark._g_2dio_2derror_2dquark.Code30: Already processing a different method; D-Bus error while installing `/x.raucb`");
  });

  it("refuses a target naming the field: no http(s) URL, a digest that is not 64 hex digits, a health time that is no whole number", () => {
    const sha256 = "a".repeat(64);
    expect(targetProblem({ url: "https://files.example/os.raucb", sha256 })).toBeNull();
    expect(targetProblem({ url: "ftp://files.example/os.raucb", sha256 })).toMatch(/^url: /);
    expect(targetProblem({ url: "https://files.example/os.raucb", sha256: "sha256:" + sha256 })).toMatch(/^sha256: /);
    expect(targetProblem({ url: "https://files.example/os.raucb", sha256, healthSeconds: 1.5 })).toMatch(/^healthSeconds: /);
  });
});

describe("the bundle's resumable download", () => {
  const body = crypto.randomBytes(300_000);
  const digest = crypto.createHash("sha256").update(body).digest("hex");
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "os-update-download-"));
  let server: http.Server;
  let base = "";
  /** per request: the Range asked; what the server does next */
  const asked: Array<string | undefined> = [];
  let cutAt: number | null = null;
  let ignoreRange = false;
  const authorizations: Array<string | undefined> = [];
  /** the same server by another name (another origin): where a redirect of the service's may lead */
  let otherBase = "";

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      asked.push(req.headers.range);
      authorizations.push(req.headers.authorization);
      if (req.url === "/moved") return void res.writeHead(302, { location: "/bundle.raucb" }).end();
      // the service's relay: a device token, which expires
      if (req.url === "/service/bundle" && req.headers.authorization !== "Bearer fresh") return void res.writeHead(401).end();
      if (req.url === "/service/elsewhere") return void res.writeHead(302, { location: `${otherBase}/bundle.raucb` }).end();
      const range = ignoreRange ? null : /^bytes=(\d+)-$/.exec(req.headers.range ?? "");
      const start = range ? Number(range[1]) : 0;
      res.writeHead(range ? 206 : 200, { "content-length": String(body.length - start) });
      if (cutAt !== null) {
        const end = cutAt;
        cutAt = null;
        // FIN after the bytes (no reset): the client reads all that was sent, then the cut
        return void res.write(body.subarray(start, end), () => res.socket?.end());
      }
      res.end(body.subarray(start));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    otherBase = base.replace("127.0.0.1", "localhost");
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("a connection cut at 100,000 bytes: the next call asks for the rest by Range and the file is whole, by digest", async () => {
    const file = path.join(dir, "a.raucb");
    asked.length = 0;
    cutAt = 100_000;
    const broken = await downloadResumable(`${base}/bundle.raucb`, file, digest).catch((e) => e);
    expect(broken).toBeInstanceOf(DownloadError);
    expect(broken.retryable).toBe(true);
    expect(fs.statSync(`${file}.part`).size).toBe(100_000);
    await downloadResumable(`${base}/bundle.raucb`, file, digest);
    expect(asked).toEqual([undefined, "bytes=100000-"]);
    expect(fs.readFileSync(file).equals(body)).toBe(true);
    expect(fs.existsSync(`${file}.part`)).toBe(false);
  });

  it("a server that ignores the Range (200) starts the file over; a redirect is followed", async () => {
    const file = path.join(dir, "b.raucb");
    fs.writeFileSync(`${file}.part`, body.subarray(0, 1000));
    ignoreRange = true;
    await downloadResumable(`${base}/moved`, file, digest);
    ignoreRange = false;
    expect(fs.readFileSync(file).equals(body)).toBe(true);
  });

  it("from the service: its headers are asked for each request, a refused token is worth asking again, and they never follow a redirect elsewhere", async () => {
    const file = path.join(dir, "d.raucb");
    let token = "stale";
    const headers = async () => ({ authorization: `Bearer ${token}` });
    const refused = await downloadResumable(`${base}/service/bundle`, file, digest, { headers }).catch((e) => e);
    expect(refused).toBeInstanceOf(DownloadError);
    expect(refused.retryable).toBe(true);
    token = "fresh";
    await downloadResumable(`${base}/service/bundle`, file, digest, { headers });
    expect(fs.readFileSync(file).equals(body)).toBe(true);
    // without headers, a 401 is final (no token to renew)
    const plain = await downloadResumable(`${base}/service/bundle`, path.join(dir, "e.raucb"), digest).catch((e) => e);
    expect(plain.retryable).toBe(false);
    authorizations.length = 0;
    await downloadResumable(`${base}/service/elsewhere`, path.join(dir, "f.raucb"), digest, { headers });
    expect(authorizations).toEqual(["Bearer fresh", undefined]);
  });

  it("a bundle fetched ahead of its update (download-only window) is not fetched again when the update begins; the update goes straight to RAUC", async () => {
    const state = new StateDir(fs.mkdtempSync(path.join(os.tmpdir(), "os-update-prefetch-")));
    state.ensure();
    const system: RaucStatus = { compatible: "lab", booted: "A", bootPrimary: "rootfs.0", slots: [
      { name: "rootfs.0", bootname: "A", device: "/dev/a", state: "booted", bootStatus: "good", version: null, imageSha256: null, installedAt: null },
      { name: "rootfs.1", bootname: "B", device: "/dev/b", state: "inactive", bootStatus: "good", version: null, imageSha256: null, installedAt: null },
    ] };
    const installed: string[] = [];
    const rauc = { status: async () => system, install: async (bundle: string) => void installed.push(bundle), mark: async () => undefined } as unknown as Rauc;
    const updater = new OsUpdater({ state, rauc, reboot: async () => undefined, bootId: async () => "boot-1", log: () => undefined });
    await updater.start();
    const target = { url: `${base}/bundle.raucb`, sha256: digest, version: "2.0.0" };
    asked.length = 0;
    await updater.prefetch(target);
    expect(asked).toHaveLength(1);
    expect(updater.update).toBeNull(); // nothing begun: the window is not open
    expect(fs.readFileSync(state.path("os-update", `${digest}.raucb`)).equals(body)).toBe(true);
    updater.begin(target);
    await updater.tick({});
    expect(updater.update?.phase).toBe("installing");
    expect(asked).toHaveLength(1);
    fs.rmSync(state.dir, { recursive: true, force: true });
  });

  it("bytes that do not match the digest are refused for good, naming both digests, and nothing is kept", async () => {
    const file = path.join(dir, "c.raucb");
    const wrong = "0".repeat(64);
    const error = await downloadResumable(`${base}/bundle.raucb`, file, wrong).catch((e) => e);
    expect(error).toBeInstanceOf(DownloadError);
    expect(error.retryable).toBe(false);
    expect(error.message).toBe(`the bundle does not match its digest: expected sha256:${wrong}, ${base}/bundle.raucb served sha256:${digest}`);
    expect(fs.existsSync(file) || fs.existsSync(`${file}.part`)).toBe(false);
  });
});

describe("a routine boot (no update under way)", () => {
  const system: RaucStatus = { compatible: "lab", booted: "B", bootPrimary: "rootfs.1", slots: [
    { name: "rootfs.0", bootname: "A", device: "/dev/a", state: "inactive", bootStatus: "good", version: "1.0.0", imageSha256: null, installedAt: null },
    { name: "rootfs.1", bootname: "B", device: "/dev/b", state: "booted", bootStatus: "good", version: "2.0.0", imageSha256: null, installedAt: null },
  ] };
  const updaterWith = async (state: StateDir, marks: string[]) => {
    const rauc = { status: async () => system, install: async () => undefined, mark: async (verdict: string) => void marks.push(verdict) } as unknown as Rauc;
    const updater = new OsUpdater({ state, rauc, reboot: async () => undefined, bootId: async () => "boot-7", log: () => undefined });
    await updater.start();
    return updater;
  };

  it("marks the booted slot good once per run, after the device's own checks pass; the service and the applications are not asked", async () => {
    const state = new StateDir(fs.mkdtempSync(path.join(os.tmpdir(), "os-update-boot-")));
    state.ensure();
    const marks: string[] = [];
    const updater = await updaterWith(state, marks);
    let deviceProblem: string | null = "20-data exited 3: /data is not mounted";
    const asked: string[] = [];
    const health = {
      service: async () => (asked.push("service"), "no heartbeat was answered since the boot"),
      applications: async () => (asked.push("applications"), "web exited"),
      device: async () => (asked.push("device"), deviceProblem),
    };
    await updater.tick(health);
    expect(marks).toEqual([]); // its own check fails: not good yet, asked again
    deviceProblem = null;
    await updater.tick(health);
    await updater.tick(health);
    expect(marks).toEqual(["good"]);
    expect(asked).toEqual(["device", "device"]);
    fs.rmSync(state.dir, { recursive: true, force: true });
  });

  it("not for the slot a finished update marked bad that the bootloader booted anyway", async () => {
    const state = new StateDir(fs.mkdtempSync(path.join(os.tmpdir(), "os-update-boot-")));
    state.ensure();
    state.writeJson("os-update.json", {
      target: { url: "https://files.example/b.raucb", sha256: "ab".repeat(32) }, phase: "failed", since: new Date().toISOString(),
      fromSlot: "A", toSlot: "B", reason: "slot B was marked bad, but the bootloader booted slot B",
    });
    const marks: string[] = [];
    const updater = await updaterWith(state, marks);
    await updater.tick({ device: async () => null });
    expect(marks).toEqual([]);
    fs.rmSync(state.dir, { recursive: true, force: true });
  });
});

describe("the device's own health checks (health.d)", () => {
  it("every executable must exit 0: failures are named with their exit and last line; other files are not run; a hanging check fails at its timeout", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "health-d-"));
    const script = (name: string, body: string, mode = 0o755) => fs.writeFileSync(path.join(dir, name), `#!/bin/sh\n${body}\n`, { mode });
    expect(await runHealthDir(path.join(dir, "missing"))).toBeNull();
    script("10-network", "exit 0");
    expect(await runHealthDir(dir)).toBeNull();
    script("20-disk", "echo checking /data\necho '/data is not mounted' >&2\nexit 3");
    script("30-notes.txt", "exit 1", 0o644); // not executable: not a check
    script("40-old.disabled", "exit 1");
    script("50-hangs", "sleep 30");
    expect(await runHealthDir(dir, 500)).toBe("20-disk exited 3: /data is not mounted, 50-hangs did not finish within 1 s");
    fs.rmSync(dir, { recursive: true, force: true });
  });
});
