// The service's end of a device leg, on loopback, for the handlers' tests: a WebSocket server
// that takes the agent's connection (checking the device token and the one-use token it was
// given, as the service does) and hands the test the user's side of the stream: frames to send,
// and what the device sent, channel by channel.
import { once } from "node:events";
import type { AddressInfo } from "node:net";
import { WebSocketServer, type WebSocket } from "ws";
import { CLOSE, parseFrame, RESIZE, STATUS, STDIN } from "../../../agent/src/remote/frames.js";

export const DEVICE_TOKEN = "Bearer device-token-for-tests";

export class UserSide {
  readonly out: Buffer[] = [];
  readonly err: Buffer[] = [];
  readonly statuses: Record<string, unknown>[] = [];
  readonly halfClosed: number[] = [];
  closeCode: number | null = null;
  private waiters: Array<() => void> = [];
  readonly closed: Promise<number>;

  constructor(readonly socket: WebSocket) {
    socket.on("message", (data: Buffer) => {
      const frame = parseFrame(data);
      if (!frame) return;
      if (frame.channel === 1) this.out.push(Buffer.from(frame.payload));
      else if (frame.channel === 2) this.err.push(Buffer.from(frame.payload));
      else if (frame.channel === STATUS) this.statuses.push(JSON.parse(frame.payload.toString("utf8")));
      else if (frame.channel === CLOSE) this.halfClosed.push(frame.payload[0]);
      this.notify();
    });
    this.closed = new Promise((resolve) => socket.once("close", (code) => {
      this.closeCode = code;
      this.notify();
      resolve(code);
    }));
  }

  private notify() {
    const waiters = this.waiters;
    this.waiters = [];
    for (const wake of waiters) wake();
  }

  /** Resolves once `check` holds (checked at every frame; the test's own timeout bounds it). */
  async until(check: () => boolean): Promise<void> {
    while (!check()) {
      if (this.closeCode !== null && !check()) throw new Error(`the stream closed (${this.closeCode}) first; stdout so far: ${this.stdout}`);
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
  }

  get stdout(): string {
    return Buffer.concat(this.out).toString("utf8");
  }

  get stderr(): string {
    return Buffer.concat(this.err).toString("utf8");
  }

  send(channel: number, payload: Buffer | string) {
    const body = typeof payload === "string" ? Buffer.from(payload) : payload;
    this.socket.send(Buffer.concat([Buffer.from([channel]), body]));
  }

  type(text: string) {
    this.send(STDIN, text);
  }

  resize(cols: number, rows: number) {
    this.send(RESIZE, JSON.stringify({ cols, rows }));
  }

  endInput() {
    this.socket.send(Buffer.from([CLOSE, STDIN]));
  }
}

export class StreamServer {
  private readonly server: WebSocketServer;
  private readonly expected = new Map<string, (user: UserSide) => void>();
  readonly refusedUpgrades: string[] = [];
  url = "";

  private constructor() {
    this.server = new WebSocketServer({ host: "127.0.0.1", port: 0, perMessageDeflate: false });
    this.server.on("connection", (socket, request) => {
      const url = new URL(request.url ?? "/", "http://x");
      const token = url.searchParams.get("token") ?? "";
      const deliver = this.expected.get(token);
      if (!deliver || request.headers.authorization !== DEVICE_TOKEN) {
        this.refusedUpgrades.push(token);
        socket.close(4403, "not this device's session");
        return;
      }
      this.expected.delete(token); // one use
      deliver(new UserSide(socket));
    });
  }

  static async start(): Promise<StreamServer> {
    const server = new StreamServer();
    await once(server.server, "listening");
    server.url = `ws://127.0.0.1:${(server.server.address() as AddressInfo).port}`;
    return server;
  }

  /** The URL a device joins with `token`, and the user side once it joined. */
  expect(token: string): { url: string; user: Promise<UserSide> } {
    const user = new Promise<UserSide>((resolve) => this.expected.set(token, resolve));
    return { url: `${this.url}/api/v1/agent/remote-sessions/s/stream?token=${encodeURIComponent(token)}`, user };
  }

  async close() {
    for (const client of this.server.clients) client.terminate();
    await new Promise((resolve) => this.server.close(resolve));
  }
}
