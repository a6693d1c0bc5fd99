// Port forwarding through the agent's handler to real TCP servers on loopback: one stream per
// connection, many at once, a large transfer checked by hash, half-close, and the device's
// allow list.
import { createHash, randomBytes } from "node:crypto";
import { once } from "node:events";
import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { STDIN } from "../../../agent/src/remote/frames.js";
import { joined, refused, testConfig } from "./harness.js";
import { StreamServer, type UserSide } from "./stream-server.js";

let server: StreamServer;
let echo: net.Server;
let echoPort = 0;
let source: net.Server;
let sourcePort = 0;
const BIG = randomBytes(50 * 1024 * 1024);

function sha256(data: Buffer | Buffer[]) {
  return createHash("sha256").update(Array.isArray(data) ? Buffer.concat(data) : data).digest("hex");
}

beforeAll(async () => {
  server = await StreamServer.start();
  // answers what it read, once the client ended its side (a request read to its end)
  echo = net.createServer({ allowHalfOpen: true }, (socket) => {
    const chunks: Buffer[] = [];
    socket.on("data", (chunk) => chunks.push(chunk));
    socket.on("end", () => socket.end(Buffer.concat(chunks)));
  });
  // sends 50 MB and closes
  source = net.createServer((socket) => socket.end(BIG));
  for (const s of [echo, source]) s.listen(0, "127.0.0.1");
  await Promise.all([once(echo, "listening"), once(source, "listening")]);
  echoPort = (echo.address() as net.AddressInfo).port;
  sourcePort = (source.address() as net.AddressInfo).port;
});
afterAll(async () => {
  await server.close();
  echo.close();
  source.close();
});

async function sendAll(user: UserSide, data: Buffer) {
  for (let at = 0; at < data.length; at += 64 * 1024) user.send(STDIN, data.subarray(at, at + 64 * 1024));
  user.endInput();
}

describe("port-forward", () => {
  it("50 MB from a target on the device's loopback arrive whole (by hash), then its end and the close", async () => {
    const { user, done } = await joined(server, { kind: "port-forward", target: { port: sourcePort } });
    user.endInput();
    await done;
    expect(sha256(user.out)).toBe(sha256(BIG));
    expect(user.halfClosed).toEqual([1]);
    expect(user.closeCode).toBe(1000);
  });

  it("32 connections at once, each its own stream, each answered with exactly its own bytes after its half-close", async () => {
    const payloads = Array.from({ length: 32 }, (_, i) => randomBytes(256 * 1024 + i));
    const results = await Promise.all(payloads.map(async (payload) => {
      const { user, done } = await joined(server, { kind: "port-forward", target: { host: "127.0.0.1", port: echoPort } });
      await sendAll(user, payload);
      await done;
      return sha256(user.out);
    }));
    expect(results).toEqual(payloads.map((payload) => sha256(payload)));
  });

  it("a target the device does not allow is refused naming the rule; the default allows the loopback only", async () => {
    expect(await refused(server, { kind: "port-forward", target: { host: "10.0.0.5", port: 80 } }))
      .toBe("the device's remoteAccess.portForward.allow does not include 10.0.0.5:80 (allowed: 127.0.0.1:*, localhost:*, [::1]:*)");
    const narrow = testConfig((c) => (c.portForward.allow = ["127.0.0.1:8000-8099"]));
    expect(await refused(server, { kind: "port-forward", target: { port: echoPort } }, narrow)).toMatch(/does not include 127\.0\.0\.1:\d+ \(allowed: 127\.0\.0\.1:8000-8099\)$/);
    expect(await refused(server, { kind: "port-forward", target: { port: echoPort } }, testConfig((c) => (c.portForward.enabled = false))))
      .toBe("the device's configuration switches port forwarding off (remoteAccess.portForward.enabled: false)");
    expect(await refused(server, { kind: "port-forward", target: { port: 70000 } })).toBe("target.port: a port number 1-65535");
  });

  it("a port nothing listens on is said on channel 3", async () => {
    const closed = net.createServer().listen(0, "127.0.0.1");
    await once(closed, "listening");
    const port = (closed.address() as net.AddressInfo).port;
    closed.close();
    const { user, done } = await joined(server, { kind: "port-forward", target: { port } });
    await done;
    expect(user.statuses).toEqual([{ error: `cannot connect to 127.0.0.1:${port} (ECONNREFUSED)` }]);
  });
});
