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
import { targetProblem } from "../../../agent/src/os-update/updater.js";

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

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      asked.push(req.headers.range);
      if (req.url === "/moved") return void res.writeHead(302, { location: "/bundle.raucb" }).end();
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
