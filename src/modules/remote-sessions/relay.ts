// The relay: where a stream's two legs meet, in the process where its first leg arrived
// (docs/remote-access.md, "Several processes"). Messages pass as they are, in both
// directions at once; never one per round trip. Back-pressure: while the receiving leg holds
// more than HIGH_WATER_BYTES unsent, the sending leg's socket is not read (ws pause), and
// reading resumes once it drained below LOW_WATER_BYTES, so a flood from either side costs
// the service at most about HIGH_WATER_BYTES + one message per direction. On the way the
// relay counts the data bytes each way, takes the exit code from the device's status channel,
// records a shell's output when the organization asks, and watches idleness.
import { StringDecoder } from "node:string_decoder";
import type WebSocket from "ws";
import type { Services } from "../../services.js";
import { perService } from "../../lib/per-service.js";
import { addCounts, endSession, markStarted, type EndDetails } from "./lifecycle.js";
import { remoteAccessOf } from "./settings.js";
import type { EndReason } from "./schemas.js";
import { remoteSignalsOf } from "./signals.js";
import { Recorder } from "./recording.js";

export const HIGH_WATER_BYTES = 1024 * 1024;
export const LOW_WATER_BYTES = 256 * 1024;
/** Largest message a leg may send (ws refuses bigger ones with close code 1009). */
export const MAX_MESSAGE_BYTES = 1024 * 1024;
export const CHANNEL = { stdin: 0, stdout: 1, stderr: 2, status: 3, resize: 4, close: 255 } as const;
/** What each side may send; anything else is dropped (a user cannot forge the device's status). */
const FROM_USER = new Set<number>([CHANNEL.stdin, CHANNEL.resize, CHANNEL.close]);
const FROM_DEVICE = new Set<number>([CHANNEL.stdout, CHANNEL.stderr, CHANNEL.status, CHANNEL.close]);
/** How often a busy stream marks its session active in the table (the sweep's idle check reads it). */
const ACTIVITY_WRITE_MS = 30_000;
const CHECK_INTERVAL_MS = 1000;

export type Side = "user" | "device";

/** Close codes the legs see: 1000 normal, 1001 going away (service stopping), 4000 + ended by policy. */
export const CLOSE_ENDED = 4000;

/**
 * One direction of a pipe: `from`'s messages go to `to` (through `filter`, which may drop or
 * note them); `from` is paused while `to` holds more than the high watermark.
 */
export class Flow {
  paused = false;
  messages = 0;

  constructor(
    private readonly from: WebSocket,
    private readonly to: WebSocket,
    private readonly filter: (data: Buffer) => boolean = () => true,
  ) {}

  start() {
    this.from.on("message", (data: Buffer, isBinary: boolean) => {
      if (!isBinary || data.length === 0 || !this.filter(data)) return;
      if (this.to.readyState !== this.to.OPEN) return;
      this.messages++;
      this.to.send(data, { binary: true }, () => this.maybeResume());
      if (!this.paused && this.to.bufferedAmount > HIGH_WATER_BYTES) {
        this.paused = true;
        this.from.pause();
      }
    });
    this.from.resume(); // a leg waits paused until its partner is there
  }

  private maybeResume() {
    if (this.paused && this.to.bufferedAmount <= LOW_WATER_BYTES) {
      this.paused = false;
      this.from.resume();
    }
  }
}

/** Pipes two sockets both ways with back-pressure; `onClose` once when either closes. */
export function pipeBothWays(a: WebSocket, b: WebSocket, onClose: (closedFirst: WebSocket, code: number, reason: string) => void) {
  const ab = new Flow(a, b);
  const ba = new Flow(b, a);
  ab.start();
  ba.start();
  let done = false;
  const closed = (ws: WebSocket, other: WebSocket) => (code: number, reason: Buffer) => {
    if (done) return;
    done = true;
    onClose(ws, code, reason.toString());
    closeLeg(other, code === 1005 || code === 1006 ? 1000 : code, reason.toString());
  };
  a.once("close", closed(a, b));
  b.once("close", closed(b, a));
  return { ab, ba };
}

/** Closes a leg with a code valid to send (1005/1006 are never sent; a reason is at most 123 bytes). */
export function closeLeg(ws: WebSocket, code = 1000, reason = "") {
  const sendable = code === 1000 || (code >= 1001 && code <= 1014 && code !== 1004 && code !== 1005 && code !== 1006) || (code >= 3000 && code <= 4999);
  // A paused leg (its partner never came, or back-pressure) must read again to finish the closing handshake.
  if (ws.readyState === ws.OPEN) ws.resume();
  if (ws.readyState === ws.OPEN || ws.readyState === ws.CONNECTING) ws.close(sendable ? code : 1000, Buffer.from(reason).subarray(0, 123).toString());
}

export function statusMessage(body: object): Buffer {
  return Buffer.concat([Buffer.from([CHANNEL.status]), Buffer.from(JSON.stringify(body))]);
}

interface SessionFacts {
  id: string;
  kind: string;
  idleTimeoutSeconds: number;
  expiresAt: Date;
  recorder: Recorder | null;
}

/** A stream relayed here: one connection of a session, its two legs once both arrived. */
export class RelayedStream {
  user: WebSocket | null = null;
  device: WebSocket | null = null;
  toDevice: Flow | null = null;
  fromDevice: Flow | null = null;
  bytesToDevice = 0;
  bytesFromDevice = 0;
  exitCode: number | null = null;
  lastActivity = Date.now();
  lastActivityWritten = 0;
  finished = false;
  /** why the session ended, when an "ended" signal closes the stream */
  endedBy: EndReason | null = null;

  constructor(
    readonly connectionId: string,
    readonly session: SessionFacts,
    private readonly relay: Relay,
  ) {}

  get started() {
    return this.toDevice !== null;
  }

  attach(side: Side, ws: WebSocket) {
    ws.pause(); // nothing is read until the partner is there: the kernel holds what it sends
    if (side === "user") this.user = ws;
    else this.device = ws;
    ws.once("close", (code: number, reason: Buffer) => this.legClosed(side, code, reason.toString()));
    ws.on("error", () => undefined);
    if (this.user && this.device) this.start();
  }

  private start() {
    const user = this.user!;
    const device = this.device!;
    const decoder = new StringDecoder("utf8");
    this.toDevice = new Flow(user, device, (data) => {
      const channel = data[0];
      if (!FROM_USER.has(channel)) return false;
      this.lastActivity = Date.now();
      if (channel === CHANNEL.stdin) this.bytesToDevice += data.length - 1;
      else if (channel === CHANNEL.resize) this.session.recorder?.resize(data.subarray(1));
      return true;
    });
    this.fromDevice = new Flow(device, user, (data) => {
      const channel = data[0];
      if (!FROM_DEVICE.has(channel)) return false;
      this.lastActivity = Date.now();
      if (channel === CHANNEL.stdout || channel === CHANNEL.stderr) {
        this.bytesFromDevice += data.length - 1;
        this.session.recorder?.output(decoder.write(data.subarray(1)));
      } else if (channel === CHANNEL.status) {
        this.noteStatus(data.subarray(1));
      }
      return true;
    });
    this.toDevice.start();
    this.fromDevice.start();
    markStarted(this.relay.services, this.session.id).catch((err: Error) => this.relay.services.logger.warn({ err: err.message }, "remote session start not stored"));
  }

  private noteStatus(body: Buffer) {
    try {
      const status = JSON.parse(body.toString()) as { exitCode?: unknown };
      if (typeof status.exitCode === "number" && Number.isInteger(status.exitCode)) this.exitCode = status.exitCode;
    } catch {
      // not JSON: passed on as it is; the client decides
    }
  }

  private legClosed(side: Side, code: number, reason: string) {
    const other = side === "user" ? this.device : this.user;
    if (other) closeLeg(other, code === 1005 || code === 1006 ? 1000 : code, reason);
    if (this.finished) return;
    this.finished = true;
    this.relay.forget(this);
    const details: EndDetails = { bytesToDevice: this.bytesToDevice, bytesFromDevice: this.bytesFromDevice, exitCode: this.exitCode };
    const multiStream = this.session.kind === "port-forward";
    const endReason: EndReason = this.endedBy ?? (side === "user" ? "closed-by-user" : code === 1000 || this.exitCode !== null ? "completed" : "device-disconnected");
    const services = this.relay.services;
    const work = (async () => {
      await this.session.recorder?.finish(services).catch((err: Error) => services.logger.warn({ err: err.message, sessionId: this.session.id }, "recording not stored"));
      if (multiStream || this.endedBy) {
        // The session goes on (port-forward) or was already ended: only the counts are added.
        await addCounts(services, this.session.id, this.bytesToDevice, this.bytesFromDevice, this.exitCode);
        await services.prisma.remoteConnection.updateMany({ where: { id: this.connectionId, endedAt: null }, data: { endedAt: new Date() } });
        return;
      }
      const actor = side === "device" ? { type: "device" as const, id: null } : undefined;
      const ended = await endSession(services, this.session.id, endReason, actor, details);
      if (ended.length === 0) await addCounts(services, this.session.id, this.bytesToDevice, this.bytesFromDevice, this.exitCode);
    })().catch((err: Error) => services.logger.warn({ err: err.message, sessionId: this.session.id }, "remote stream end not stored"));
    this.relay.track(work);
  }

  /** The session ended (any process said so): the user hears why, both legs close. */
  close(reason: EndReason, message?: string, code = CLOSE_ENDED) {
    this.endedBy ??= reason;
    if (this.user && message && this.user.readyState === this.user.OPEN) this.user.send(statusMessage({ error: message, endReason: reason }));
    for (const ws of [this.user, this.device]) if (ws) closeLeg(ws, code, reason);
    if (!this.user && !this.device) this.relay.forget(this);
  }
}

/** A leg that arrived here while its stream is relayed by another process, piped there. */
export interface ForwardedLeg {
  sessionId: string;
  leg: WebSocket;
  hop: WebSocket;
}

export class Relay {
  readonly streams = new Map<string, RelayedStream>();
  readonly forwarded = new Set<ForwardedLeg>();
  private readonly checker: NodeJS.Timeout;
  private readonly unsubscribe: () => void;
  stopping = false;

  constructor(readonly services: Services) {
    this.checker = setInterval(() => this.check(), CHECK_INTERVAL_MS);
    this.checker.unref();
    this.unsubscribe = remoteSignalsOf(services).onEnded((signal) => this.closeSession(signal.sessionId, signal.reason as EndReason, signal.message));
  }

  /** The stream of `connectionId` relayed here, made on its first leg. */
  async streamOf(connectionId: string, sessionId: string): Promise<RelayedStream | null> {
    const existing = this.streams.get(connectionId);
    if (existing) return existing;
    const session = await this.services.prisma.remoteSession.findUnique({
      where: { id: sessionId },
      select: { id: true, kind: true, state: true, idleTimeoutSeconds: true, expiresAt: true, recorded: true, cols: true, rows: true, organizationId: true, createdAt: true },
    });
    if (!session || session.state === "ended") return null;
    const again = this.streams.get(connectionId); // another leg made it meanwhile
    if (again) return again;
    let recorder: Recorder | null = null;
    if (session.recorded) {
      const org = await this.services.prisma.organization.findUnique({ where: { id: session.organizationId }, select: { settings: true } });
      recorder = new Recorder(session.id, remoteAccessOf(org?.settings).recordingMaxBytes, session.cols ?? 80, session.rows ?? 24);
    }
    const stream = this.streams.get(connectionId) ?? new RelayedStream(connectionId, { id: session.id, kind: session.kind, idleTimeoutSeconds: session.idleTimeoutSeconds, expiresAt: session.expiresAt, recorder }, this);
    this.streams.set(connectionId, stream);
    return stream;
  }

  forget(stream: RelayedStream) {
    if (this.streams.get(stream.connectionId) === stream) this.streams.delete(stream.connectionId);
  }

  addForwarded(f: ForwardedLeg) {
    this.forwarded.add(f);
    const drop = () => this.forwarded.delete(f);
    f.leg.once("close", drop);
    f.hop.once("close", drop);
  }

  /** Closes the legs of a session held here (relayed or forwarded). */
  closeSession(sessionId: string, reason: EndReason, message?: string, code = CLOSE_ENDED) {
    for (const stream of [...this.streams.values()]) if (stream.session.id === sessionId) stream.close(reason, message, code);
    for (const f of [...this.forwarded]) {
      if (f.sessionId !== sessionId) continue;
      closeLeg(f.leg, code, reason);
      closeLeg(f.hop, code, reason);
    }
  }

  /** Idle and absolute deadlines of the streams relayed here; the session row's activity mark. */
  private check() {
    const now = Date.now();
    for (const stream of [...this.streams.values()]) {
      if (!stream.started || stream.finished) continue;
      const { session } = stream;
      if (now >= session.expiresAt.getTime()) {
        void this.endFor(stream, "max-duration", "the session reached its maximum duration");
      } else if (session.kind !== "port-forward" && now - stream.lastActivity >= session.idleTimeoutSeconds * 1000) {
        void this.endFor(stream, "idle-timeout", "the session was idle too long");
      } else if (stream.lastActivity > stream.lastActivityWritten && now - stream.lastActivityWritten >= ACTIVITY_WRITE_MS) {
        stream.lastActivityWritten = now;
        this.services.prisma.remoteSession
          .updateMany({ where: { id: session.id, state: "active" }, data: { lastActivityAt: new Date(stream.lastActivity) } })
          .catch(() => undefined);
      }
    }
  }

  private async endFor(stream: RelayedStream, reason: EndReason, message: string) {
    stream.endedBy ??= reason;
    // The stream's counts are added as its legs close (RelayedStream.legClosed).
    await endSession(this.services, stream.session.id, reason, undefined, { message }).catch((err: Error) =>
      this.services.logger.warn({ err: err.message }, "remote session end not stored"),
    );
  }

  /** Writes a closing stream still has to make (its end, its counts, its recording). */
  private readonly writes = new Set<Promise<unknown>>();

  track(work: Promise<unknown>) {
    this.writes.add(work);
    void work.finally(() => this.writes.delete(work));
  }

  /**
   * The service stops: the sessions relayed here end service-stopped with what was counted,
   * every leg here closes (1001, going away), and nothing is left to write.
   */
  async stop() {
    this.stopping = true;
    clearInterval(this.checker);
    this.unsubscribe();
    const counts = new Map<string, { toDevice: number; fromDevice: number; exitCode: number | null }>();
    const streams = [...this.streams.values()];
    for (const stream of streams) {
      stream.finished = true; // its legs' close writes nothing more: it is all written here
      stream.endedBy ??= "service-stopped";
      const c = counts.get(stream.session.id) ?? { toDevice: 0, fromDevice: 0, exitCode: null };
      c.toDevice += stream.bytesToDevice;
      c.fromDevice += stream.bytesFromDevice;
      c.exitCode ??= stream.exitCode;
      counts.set(stream.session.id, c);
    }
    await Promise.all([
      ...[...counts].map(async ([id, c]) => {
        const details = { bytesToDevice: c.toDevice, bytesFromDevice: c.fromDevice, exitCode: c.exitCode, message: "the service is stopping" };
        const ended = await endSession(this.services, id, "service-stopped", undefined, details);
        if (ended.length === 0) await addCounts(this.services, id, c.toDevice, c.fromDevice, c.exitCode);
      }),
      ...streams.map((s) => s.session.recorder?.finish(this.services)),
      ...this.writes,
    ].map((p) => Promise.resolve(p).catch(() => undefined)));
    for (const stream of streams) stream.close("service-stopped", "the service is stopping", 1001);
    this.streams.clear();
    for (const f of [...this.forwarded]) {
      closeLeg(f.leg, 1001, "service-stopped");
      closeLeg(f.hop, 1001, "service-stopped");
    }
  }
}

export const remoteRelayOf = perService((services: Services) => new Relay(services));
