// The agent's wake-up (agent/src/remote/remote-access.ts) against a loopback stand-in of the
// service's device routes as the contract gives them (docs/remote-access.md, "Device side"): the
// long-poll held while the heartbeat says enabled and let go when it says no, an offer served
// once whether the wait or the heartbeat brought it, a refusal naming the device's rule, the
// device token on every call. And the configuration file's checks.
import { once } from "node:events";
import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WebSocketServer } from "ws";
import { ConfigError, loadRemoteAccess, parseRemoteAccess } from "../../../agent/src/remote/config.js";
import type { Offer } from "../../../agent/src/remote/offer.js";
import { backoff, RemoteAccess } from "../../../agent/src/remote/remote-access.js";
import { testConfig } from "./harness.js";
import { DEVICE_TOKEN, UserSide } from "./stream-server.js";

class FakeService {
  readonly server = http.createServer((req, res) => this.answer(req, res));
  private readonly streams = new WebSocketServer({ noServer: true });
  readonly waits: http.IncomingMessage[] = [];
  readonly refusals: Array<{ id: string; reason: string }> = [];
  readonly joined: UserSide[] = [];
  readonly authorizations = new Set<string>();
  /** offers the next wait answers with */
  next: Offer[] = [];
  private waiting: Array<() => void> = [];
  url = "";

  constructor() {
    this.server.on("upgrade", (req, socket, head) => {
      this.authorizations.add(String(req.headers.authorization));
      this.streams.handleUpgrade(req, socket, head, (ws) => {
        this.joined.push(new UserSide(ws));
        this.notify();
      });
    });
  }

  async start() {
    this.server.listen(0, "127.0.0.1");
    await once(this.server, "listening");
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  private notify() {
    const waiting = this.waiting;
    this.waiting = [];
    for (const wake of waiting) wake();
  }

  async until(check: () => boolean) {
    while (!check()) await new Promise<void>((resolve) => this.waiting.push(resolve));
  }

  private answer(req: http.IncomingMessage, res: http.ServerResponse) {
    this.authorizations.add(String(req.headers.authorization));
    if (req.method === "GET" && req.url === "/api/v1/agent/remote/wait") {
      this.waits.push(req);
      req.once("close", () => this.notify());
      this.notify();
      if (this.next.length) {
        const offers = this.next;
        this.next = [];
        res.end(JSON.stringify({ enabled: true, offers }));
      }
      // else held, as the service holds it (until the test ends or the agent lets go)
      return;
    }
    const refusal = /^\/api\/v1\/agent\/remote-sessions\/([^/]+)\/refuse$/.exec(req.url ?? "");
    if (req.method === "POST" && refusal) {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        this.refusals.push({ id: refusal[1], reason: JSON.parse(Buffer.concat(chunks).toString()).reason });
        res.end(JSON.stringify({ id: refusal[1], state: "ended", endReason: "device-refused" }));
        this.notify();
      });
      return;
    }
    res.statusCode = 404;
    res.end("{}");
  }

  async close() {
    this.server.closeAllConnections();
    for (const client of this.streams.clients) client.terminate();
    await new Promise((resolve) => this.server.close(resolve));
  }
}

let service: FakeService;
beforeAll(async () => {
  service = new FakeService();
  await service.start();
});
afterAll(() => service.close());

const offer = (kind: Offer["kind"], id: string, extra: Partial<Offer> = {}): Offer =>
  ({ sessionId: id, connectionId: `${id.slice(0, -1)}c`, kind, token: `token-${id}`, expiresAt: new Date(Date.now() + 60_000).toISOString(), ...extra }) as Offer;

describe("the wake-up", () => {
  it("holds the long-poll while enabled, serves each offer once (wait and heartbeat), refuses by the device's rule, and lets go when disabled", async () => {
    const lines: string[] = [];
    const remote = new RemoteAccess({
      serviceUrl: service.url, authorization: async () => DEVICE_TOKEN, state: null, log: (_level, message) => lines.push(message),
      config: testConfig((c) => (c.shell = false)),
    });
    await remote.start();
    const exec = offer("exec", "11111111-1111-4111-8111-111111111111", { command: ["echo", "woken"] });
    service.next = [exec];
    remote.onHeartbeat({ enabled: true });
    await service.until(() => service.joined.length === 1);
    const user = service.joined[0];
    await user.closed;
    expect(user.stdout).toBe("woken\n");
    expect(user.statuses).toEqual([{ exitCode: 0 }]);

    // the same offer again by the heartbeat (and a shell the device switched off)
    const shell = offer("shell", "22222222-2222-4222-8222-222222222222");
    remote.onHeartbeat({ enabled: true, pending: [exec, shell] });
    await service.until(() => service.refusals.length === 1);
    expect(service.refusals).toEqual([{ id: shell.sessionId, reason: "the device's configuration switches the shell off (remoteAccess.shell: false)" }]);
    expect(service.joined).toHaveLength(1);
    expect(remote.handled).toBe(2);

    // a wait is held again; the heartbeat turning it off lets it go
    await service.until(() => service.waits.length >= 2 && !service.waits.at(-1)!.destroyed);
    const held = service.waits.at(-1)!;
    remote.onHeartbeat({ enabled: false });
    await service.until(() => held.destroyed);
    await remote.stop();
    expect([...service.authorizations]).toEqual([DEVICE_TOKEN]);
    expect(lines).toContain(`remote session ${shell.sessionId} (shell) refused: the device's configuration switches the shell off (remoteAccess.shell: false)`);
  });

  it("a device that switches remote access off holds no long-poll and refuses what the heartbeat brings", async () => {
    const waitsBefore = service.waits.length;
    const remote = new RemoteAccess({ serviceUrl: service.url, authorization: async () => DEVICE_TOKEN, state: null, log: () => undefined, config: testConfig((c) => (c.enabled = false)) });
    const exec = offer("exec", "33333333-3333-4333-8333-333333333333", { command: ["true"] });
    remote.onHeartbeat({ enabled: true, pending: [exec] });
    await service.until(() => service.refusals.some((r) => r.id === exec.sessionId));
    expect(service.refusals.at(-1)!.reason).toBe("remote access is switched off on the device (remoteAccess.enabled: false)");
    await remote.stop();
    expect(service.waits.length).toBe(waitsBefore);
  });

  it("back-off: doubling from the minimum, capped, with jitter between half and all of it", () => {
    for (let i = 0; i < 200; i++) {
      const first = backoff(1, 1000, 60_000);
      expect(first).toBeGreaterThanOrEqual(500);
      expect(first).toBeLessThanOrEqual(1000);
      const late = backoff(30, 1000, 60_000);
      expect(late).toBeGreaterThanOrEqual(30_000);
      expect(late).toBeLessThanOrEqual(60_000);
    }
  });
});

describe("the configuration file", () => {
  it("defaults, a partial file, and a wrong setting named", () => {
    expect(parseRemoteAccess(undefined).portForward.allow).toEqual(["127.0.0.1:*", "localhost:*", "[::1]:*"]);
    const partial = parseRemoteAccess({ remoteAccess: { shell: false, portForward: { allow: ["127.0.0.1:8000-8099"] }, files: false } });
    expect(partial).toMatchObject({ enabled: true, shell: false, exec: true, portForward: { enabled: true, allow: ["127.0.0.1:8000-8099"] }, files: { read: false, write: false }, user: "fleet-remote" });
    expect(() => parseRemoteAccess({ remoteAccess: { portForward: { allow: ["10.0.0.5"] } } })).toThrow(new ConfigError('remoteAccess.portForward.allow: "10.0.0.5" is not host:port (port: a number, a range 8000-8099 or *)'));
    expect(() => parseRemoteAccess({ remoteAccess: { shel: false } })).toThrow("remoteAccess.shel: unknown setting (known: enabled, shell, exec, portForward, files, user)");
    expect(() => parseRemoteAccess({ remoteAccess: { files: { roots: ["var/log"] } } })).toThrow('remoteAccess.files.roots: "var/log" is not an absolute path');
    fs.mkdirSync("/dev/shm/fleet-tests", { recursive: true });
    const file = fs.mkdtempSync("/dev/shm/fleet-tests/remote-config-") + "/config.yaml";
    fs.writeFileSync(file, "remoteAccess:\n  exec: maybe\n");
    expect(() => loadRemoteAccess(file)).toThrow(`${file}: remoteAccess.exec: write true or false`);
    expect(() => loadRemoteAccess(`${file}.missing`)).toThrow(/ENOENT/);
    fs.rmSync(file.replace(/\/config\.yaml$/, ""), { recursive: true });
  });
});
