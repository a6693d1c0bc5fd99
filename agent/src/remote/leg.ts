// The device's leg of a session: one WebSocket to the service (docs/remote-access.md, "Device
// side"), authenticated by the device token and the offer's one-use token. Flow control is the
// WebSocket's own: a source (a child's stdout, a TCP socket, a file) is paused while the
// socket's bufferedAmount is above HIGH_WATERMARK and resumed once a write completion finds it
// under LOW_WATERMARK, so bytes stream at the link's speed with a bounded amount in flight,
// never one message per round trip. The other way, a destination that cannot take more (its
// write() answered false) pauses reading the WebSocket until it drains.
import { EventEmitter } from "node:events";
import type { Readable, Writable } from "node:stream";
import { WebSocket } from "ws";
import { closeFrame, frame, parseFrame, statusFrame, type Frame } from "./frames.js";

export const HIGH_WATERMARK = 1024 * 1024;
export const LOW_WATERMARK = 256 * 1024;

/**
 * The masking key of every frame this leg sends: zeros, which ws on both ends skips instead of
 * XOR-ing each byte in JavaScript (the agent's bundle has no native add-on: scripts/build-agent.ts).
 * Masking (RFC 6455, 10.3) keeps a script in a browser from choosing bytes that a proxy on the way
 * misreads as HTTP; the agent is no browser and runs no page's script, and in production its stream
 * goes to the service over TLS, where no proxy reads the frames. Measured with bench/remote-access.ts (100 MiB
 * each, PGlite, one loaded 2-core machine): the service's CPU per GiB a device sends fell from
 * 17-30 s to 3-8 s, and exec output, file-read and port-forward went from 9-15 MB/s to 48-173 MB/s.
 */
export function zeroMask(mask: Buffer): void {
  mask.fill(0);
}

export interface LegEvents {
  frame: [Frame];
  /** the WebSocket closed (the user left, the service ended the session, the network broke) */
  close: [code: number, reason: string];
  /** bufferedAmount fell under the low watermark after send() answered false */
  drain: [];
}

export class DeviceLeg extends EventEmitter<LegEvents> {
  private congested = false;
  private incomingPaused = 0;
  closed = false;

  private constructor(private readonly socket: WebSocket) {
    super();
    // frames that arrive before the handler listens (it may still be opening a file) wait for it
    let early: Frame[] | null = [];
    socket.on("message", (data: Buffer) => {
      const parsed = parseFrame(data);
      if (!parsed) return;
      if (early) early.push(parsed);
      else this.emit("frame", parsed);
    });
    (this as EventEmitter).on("newListener", (event: string | symbol) => {
      if (event !== "frame" || !early) return;
      queueMicrotask(() => {
        const waiting = early ?? [];
        early = null;
        for (const frame of waiting) this.emit("frame", frame);
      });
    });
    socket.on("close", (code, reason) => {
      this.closed = true;
      this.emit("close", code, reason.toString("utf8"));
    });
    // a failure is followed by "close"; without a listener it would be thrown
    socket.on("error", () => undefined);
  }

  /** Joins the session's stream; rejects when the service refuses the upgrade or cannot be reached. */
  static open(url: string, authorization: string, timeoutMs = 15_000): Promise<DeviceLeg> {
    return new Promise((resolve, reject) => {
      const socket = new WebSocket(url, { headers: { authorization }, handshakeTimeout: timeoutMs, perMessageDeflate: false, generateMask: zeroMask });
      socket.once("open", () => {
        socket.removeAllListeners("unexpected-response");
        resolve(new DeviceLeg(socket));
      });
      socket.once("unexpected-response", (_req, res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8");
          let message = text.slice(0, 200);
          try {
            message = (JSON.parse(text) as { message?: string }).message ?? message;
          } catch {
            /* not JSON: the text */
          }
          reject(new Error(`the service refused the session's stream (${res.statusCode}${message ? `: ${message}` : ""})`));
        });
        socket.terminate();
      });
      socket.once("error", (error) => reject(new Error(`the session's stream cannot be opened (${error.message})`)));
    });
  }

  /** Whether the leg can take more now (false: pause the source until "drain"). */
  get writable(): boolean {
    return !this.closed && !this.congested;
  }

  /** Sends one frame; answers false when the source should pause until "drain". */
  send(channel: number, payload: Buffer | string): boolean {
    return this.sendRaw(frame(channel, payload));
  }

  status(status: Record<string, unknown>): boolean {
    return this.sendRaw(statusFrame(status));
  }

  halfClose(channel: number): boolean {
    return this.sendRaw(closeFrame(channel));
  }

  private sendRaw(data: Buffer): boolean {
    if (this.closed || this.socket.readyState !== WebSocket.OPEN) return false;
    this.socket.send(data, { binary: true }, () => {
      if (this.congested && this.socket.bufferedAmount <= LOW_WATERMARK) {
        this.congested = false;
        this.emit("drain");
      }
    });
    if (this.socket.bufferedAmount > HIGH_WATERMARK) this.congested = true;
    return !this.congested;
  }

  /** Stops reading frames (a destination is full); counted, so two destinations may hold it. */
  pauseIncoming() {
    if (this.incomingPaused++ === 0) this.socket.pause();
  }

  resumeIncoming() {
    if (this.incomingPaused > 0 && --this.incomingPaused === 0) this.socket.resume();
  }

  /** Ends the stream once what was sent is written (a normal end: code 1000). */
  close(code = 1000, reason = "") {
    if (this.closed) return;
    this.closed = true;
    // the closing handshake needs the peer's answer read
    this.incomingPaused = 0;
    this.socket.resume();
    try {
      this.socket.close(code, reason.slice(0, 120));
    } catch {
      this.socket.terminate();
    }
    // a peer that never answers the closing handshake does not keep the socket
    setTimeout(() => this.socket.terminate(), 5000).unref();
  }

  terminate() {
    this.closed = true;
    this.socket.terminate();
  }

  /** Resolves once the WebSocket is closed. */
  get ended(): Promise<void> {
    if (this.socket.readyState === WebSocket.CLOSED) return Promise.resolve();
    return new Promise((resolve) => this.socket.once("close", () => resolve()));
  }
}

/** Sends everything `source` reads on `channel`, pausing it while the leg is congested. Resolves at the source's end. */
export function pipeToLeg(source: Readable, leg: DeviceLeg, channel: number): Promise<void> {
  const onDrain = () => source.resume();
  leg.on("drain", onDrain);
  source.on("data", (chunk: Buffer) => {
    if (!leg.send(channel, chunk)) source.pause();
  });
  return new Promise((resolve) => {
    const done = () => {
      leg.off("drain", onDrain);
      resolve();
    };
    source.once("end", done);
    source.once("close", done);
    source.once("error", done);
  });
}

/** Writes a frame's payload to `destination`; a full destination pauses the leg until it drains. */
export function writeFromLeg(leg: DeviceLeg, destination: Writable, payload: Buffer) {
  if (destination.destroyed || destination.writableEnded) return;
  if (!destination.write(payload)) {
    leg.pauseIncoming();
    // a destination that is ending or gone emits no "drain": its end resumes the leg too
    let resumed = false;
    const resume = () => {
      if (resumed) return;
      resumed = true;
      for (const event of ["drain", "finish", "close", "error"]) destination.off(event, resume);
      leg.resumeIncoming();
    };
    for (const event of ["drain", "finish", "close", "error"]) destination.once(event, resume);
  }
}
