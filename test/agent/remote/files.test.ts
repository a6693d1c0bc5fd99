// File copy through the agent's handlers: a round trip checked by size, mode and SHA-256, the
// atomic replacement, and refusals naming the rule (outside the roots, through a symlink, `..`).
import { createHash, randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { STDIN } from "../../../agent/src/remote/frames.js";
import { joined, refused, testConfig } from "./harness.js";
import { StreamServer, type UserSide } from "./stream-server.js";

let server: StreamServer;
fs.mkdirSync("/dev/shm/fleet-tests", { recursive: true });
const root = fs.mkdtempSync("/dev/shm/fleet-tests/remote-files-");
const outside = fs.mkdtempSync("/dev/shm/fleet-tests/remote-outside-");
const config = testConfig((c) => (c.files.roots = [root]));

beforeAll(async () => {
  server = await StreamServer.start();
});
afterAll(async () => {
  await server.close();
  for (const dir of [root, outside]) fs.rmSync(dir, { recursive: true, force: true });
});

const sha256 = (data: Buffer) => createHash("sha256").update(data).digest("hex");

function upload(user: UserSide, data: Buffer) {
  for (let at = 0; at < data.length; at += 64 * 1024) user.send(STDIN, data.subarray(at, at + 64 * 1024));
  user.endInput();
}

describe("file copy", () => {
  it("writes a file atomically with its mode and reads it back, both checked by SHA-256", async () => {
    const data = randomBytes(5 * 1024 * 1024 + 3);
    const target = path.join(root, "app", "app.conf");
    fs.mkdirSync(path.dirname(target));
    fs.writeFileSync(target, "old\n");
    const write = await joined(server, { kind: "file-write", path: target, size: data.length, mode: "0640", sha256: sha256(data) }, config);
    upload(write.user, data);
    await write.done;
    expect(write.user.statuses).toEqual([{ size: data.length, sha256: sha256(data) }]);
    expect(sha256(fs.readFileSync(target))).toBe(sha256(data));
    expect(fs.statSync(target).mode & 0o777).toBe(0o640);
    expect(fs.readdirSync(path.dirname(target))).toEqual(["app.conf"]);

    const read = await joined(server, { kind: "file-read", path: target }, config);
    await read.done;
    expect(read.user.statuses).toEqual([{ size: data.length, mode: 0o640 }, { sha256: sha256(data) }]);
    expect(sha256(Buffer.concat(read.user.out))).toBe(sha256(data));
    expect(read.user.halfClosed).toEqual([1]);
  });

  it("an upload whose hash or size does not match leaves the target as it was and no temporary file", async () => {
    const target = path.join(root, "keep.txt");
    fs.writeFileSync(target, "keep\n");
    const data = Buffer.from("replacement\n");
    const wrongHash = await joined(server, { kind: "file-write", path: target, size: data.length, sha256: "0".repeat(64) }, config);
    upload(wrongHash.user, data);
    await wrongHash.done;
    expect(wrongHash.user.statuses).toEqual([{ error: `the SHA-256 of what arrived is ${sha256(data)}, ${"0".repeat(64)} was announced; ${target} is unchanged` }]);
    const short = await joined(server, { kind: "file-write", path: target, size: data.length + 5 }, config);
    upload(short.user, data);
    await short.done;
    expect(short.user.statuses).toEqual([{ error: `${data.length} bytes arrived, ${data.length + 5} were announced; ${target} is unchanged` }]);
    // the user leaves half-way
    const left = await joined(server, { kind: "file-write", path: target, size: 1000 }, config);
    left.user.send(STDIN, Buffer.alloc(10));
    left.user.socket.close();
    await left.done;
    expect(fs.readFileSync(target, "utf8")).toBe("keep\n");
    await expect.poll(() => fs.readdirSync(root).filter((name) => name.endsWith(".part"))).toEqual([]);
  });

  it("a path outside the roots is refused naming the rule, after symlinks and .. are resolved", async () => {
    fs.writeFileSync(path.join(outside, "secret"), "no");
    fs.symlinkSync(outside, path.join(root, "link"));
    const rule = `is outside the device's allowed roots (remoteAccess.files.roots: ${root})`;
    expect(await refused(server, { kind: "file-read", path: "/etc/passwd" }, config)).toBe(`/etc/passwd ${rule}`);
    expect(await refused(server, { kind: "file-read", path: `${root}/../${path.basename(outside)}/secret` }, config))
      .toBe(`${root}/../${path.basename(outside)}/secret (it resolves to ${outside}/secret) ${rule}`);
    expect(await refused(server, { kind: "file-read", path: `${root}/link/secret` }, config)).toBe(`${root}/link/secret (it resolves to ${outside}/secret) ${rule}`);
    expect(await refused(server, { kind: "file-write", path: `${root}/link/new`, size: 1 }, config)).toBe(`${root}/link/new (it resolves to ${outside}/new) ${rule}`);
    expect(fs.existsSync(path.join(outside, "new"))).toBe(false);
  });

  it("the device's switches and size cap say no first", async () => {
    const file = path.join(root, "small");
    fs.writeFileSync(file, "12345");
    expect(await refused(server, { kind: "file-read", path: file }, testConfig((c) => { c.files.roots = [root]; c.files.read = false; })))
      .toBe("the device's configuration switches file reading off (remoteAccess.files.read: false)");
    expect(await refused(server, { kind: "file-write", path: file, size: 1 }, testConfig((c) => { c.files.roots = [root]; c.files.write = false; })))
      .toBe("the device's configuration switches file writing off (remoteAccess.files.write: false)");
    expect(await refused(server, { kind: "file-read", path: file }, testConfig((c) => { c.files.roots = [root]; c.files.maxBytes = 4; })))
      .toBe(`${file} is 5 bytes, more than the device's remoteAccess.files.maxBytes (4)`);
    expect(await refused(server, { kind: "file-write", path: `${root}/`, size: 1 }, config)).toBe(`${root}/ names a directory: give the file's path`);
  });
});
