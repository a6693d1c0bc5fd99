// Opening a remote session and its stream: the one way every remote command (ssh, exec,
// port-forward, cp) reaches a device (docs/remote-access.md, the contract). POST
// /remote-sessions answers { session, ticket, streamUrl }; the stream is a WebSocket on
// streamUrl (the one-use ticket in it authenticates the user's leg), framed by channel.
import WebSocket from "ws";
import type { ApiClient } from "../client.js";
import { CliError, EXIT } from "../errors.js";
import { pause } from "../runtime.js";
import { CHANNEL, decode, encode, encodeJson, halfClose, statusOf, type Frame } from "./framing.js";

export type RemoteKind = "shell" | "exec" | "port-forward" | "file-read" | "file-write";

export interface OpenInput {
  deviceId: string;
  kind: RemoteKind;
  reason?: string;
  command?: string[];
  tty?: boolean;
  cols?: number;
  rows?: number;
  timeoutSeconds?: number;
  target?: { host: string; port: number };
  path?: string;
  size?: number;
  mode?: number;
  sha256?: string;
}

export interface RemoteSession {
  id: string;
  kind: RemoteKind;
  state: "pending" | "active" | "ended";
  endReason?: string | null;
  endMessage?: string | null;
  exitCode?: number | null;
}

export interface Opened {
  session: RemoteSession;
  ticket: string;
  streamUrl: string;
}

/** The permission each kind needs (contract: granted only when a role names it). */
export const PERMISSION_OF: Record<RemoteKind, string> = {
  shell: "remote:shell",
  exec: "remote:exec",
  "port-forward": "remote:port-forward",
  "file-read": "remote:files-read",
  "file-write": "remote:files-write",
};

/** Opens a session; a refusal keeps the service's sentence and says what to do about it. */
export async function openSession(client: ApiClient, input: OpenInput): Promise<Opened> {
  try {
    return await client.request<Opened>("POST", "/remote-sessions", { body: input });
  } catch (err) {
    throw explainRefusal(err, input.kind);
  }
}

/** A ticket for one more stream of a session (port-forward: one per TCP connection). */
export async function connectionTicket(client: ApiClient, sessionId: string): Promise<{ ticket: string; streamUrl: string }> {
  const answer = await client.request<{ ticket: string; streamUrl?: string }>("POST", `/remote-sessions/${sessionId}/tickets`);
  return { ticket: answer.ticket, streamUrl: answer.streamUrl ?? `/api/v1/remote-sessions/${sessionId}/stream?ticket=${encodeURIComponent(answer.ticket)}` };
}

function explainRefusal(err: unknown, kind: RemoteKind): unknown {
  if (!(err instanceof CliError)) return err;
  const { status } = err.details;
  let hint = "";
  if (status === 403) hint = ` (opening a ${kind} session needs the ${PERMISSION_OF[kind]} permission, which only a role that names it grants: ask an administrator)`;
  else if (status === 409 && /remote access is off/i.test(err.message)) hint = " (an administrator turns it on in the console: Organization settings, Remote access)";
  return hint ? new CliError(err.exitCode, err.message + hint, err.details) : err;
}

/** Why a session ended, as a sentence (endReason of the contract). */
export function endReasonText(reason: string | null | undefined, detail?: string): string {
  switch (reason) {
    case "completed": return "the session ended";
    case "closed-by-user": return "the session was closed";
    case "force-closed": return "an administrator closed the session";
    case "idle-timeout": return "the session was idle for too long (the organization's idle timeout)";
    case "max-duration": return "the session reached the organization's maximum duration";
    case "device-never-joined": return "the device did not join the session in time (is its agent running, with remote access allowed?)";
    case "device-refused": return `the device refused${detail ? `: ${detail}` : ""}`;
    case "device-disconnected": return "the device disconnected";
    case "certificate-revoked": return "the device's certificate was revoked";
    case "user-signed-out": return "your sign-in session ended";
    case "service-stopped": return "the service stopped";
    default: return reason ? `the session ended (${reason})` : "the connection to the service closed";
  }
}

/** The session as the service has it now; its end is recorded a moment after the stream closes, so ask a few times. */
export async function endedSession(client: ApiClient, sessionId: string): Promise<RemoteSession | null> {
  for (let attempt = 0; attempt < 10; attempt++) {
    const session = await client.request<RemoteSession>("GET", `/remote-sessions/${sessionId}`).catch(() => null);
    if (!session || session.state === "ended") return session;
    await pause(200);
  }
  return null;
}

/** Where a stream's bytes queue before the WebSocket takes more: the relay's own watermarks (contract). */
export const HIGH_WATERMARK = 1024 * 1024;
export const LOW_WATERMARK = 256 * 1024;

export interface Closed {
  code: number;
  reason: string;
}

/**
 * One stream of a session. Sending counts the bytes the WebSocket has not written yet (its
 * send callback), so a producer stops while `congested` and goes on at `onDrain`; reading
 * pauses the socket itself (ws pauses the TCP socket: the relay sees back-pressure).
 */
export class RemoteStream {
  private pending = 0;
  private drainWaiters: Array<() => void> = [];
  readonly closed: Promise<Closed>;

  constructor(readonly ws: WebSocket, onFrame: (frame: Frame) => void) {
    ws.binaryType = "nodebuffer";
    ws.on("message", (data: Buffer) => {
      const frame = decode(data);
      if (frame) onFrame(frame);
    });
    this.closed = new Promise((resolve) => ws.once("close", (code, reason) => {
      this.pending = 0;
      this.flushDrain();
      resolve({ code, reason: reason.toString("utf8") });
    }));
    ws.on("error", () => { /* reported by close */ });
  }

  get open(): boolean {
    return this.ws.readyState === WebSocket.OPEN;
  }

  get congested(): boolean {
    return this.pending > HIGH_WATERMARK;
  }

  /** Sends a frame; false when the caller should wait for `drained()` before the next. */
  send(channel: number, payload: Uint8Array | string = Buffer.alloc(0)): boolean {
    return this.sendRaw(encode(channel, payload));
  }

  sendJson(channel: number, value: unknown): boolean {
    return this.sendRaw(encodeJson(channel, value));
  }

  /** No more bytes on `channel` ([255, channel]). */
  halfClose(channel: number = CHANNEL.stdin): void {
    this.sendRaw(halfClose(channel));
  }

  private sendRaw(frame: Buffer): boolean {
    if (!this.open) return false;
    this.pending += frame.length;
    this.ws.send(frame, { binary: true }, () => {
      this.pending -= frame.length;
      if (this.pending <= LOW_WATERMARK) this.flushDrain();
    });
    return !this.congested;
  }

  /** Resolves once the unsent bytes are under the low watermark (or the stream closed). */
  drained(): Promise<void> {
    if (!this.congested || !this.open) return Promise.resolve();
    return new Promise((resolve) => this.drainWaiters.push(resolve));
  }

  private flushDrain(): void {
    const waiters = this.drainWaiters;
    this.drainWaiters = [];
    for (const resolve of waiters) resolve();
  }

  pauseReading(): void {
    this.ws.pause();
  }

  resumeReading(): void {
    this.ws.resume();
  }

  /** After the last message a session has for us: the service closes the stream, and if it has not within `ms`, this side does. */
  closeSoon(ms = 2000): void {
    // a peer that never answers the closing handshake would hold the command for ws's 30 s
    const timer = setTimeout(() => {
      this.close(1000);
      setTimeout(() => this.ws.terminate(), ms).unref();
    }, ms);
    void this.closed.then(() => clearTimeout(timer));
  }

  close(code = 1000, reason = ""): void {
    if (this.ws.readyState === WebSocket.OPEN || this.ws.readyState === WebSocket.CONNECTING) this.ws.close(code, reason);
  }
}

/** The WebSocket address of a stream (streamUrl is a path on the service). */
export function streamAddress(client: ApiClient, streamUrl: string): string {
  return new URL(streamUrl, `${client.server}/`).toString().replace(/^http/, "ws");
}

/**
 * The masking key of what the CLI sends over TLS or to this machine: zeros, which ws on both ends
 * skips instead of XOR-ing each byte in JavaScript (as the agent's leg, agent/src/remote/leg.ts,
 * where bench/remote-access.ts measured it: the service's CPU per GiB fell 4 to 7 times). Masking
 * keeps a browser's script from choosing bytes that a proxy on the way misreads; the CLI is no
 * browser, and TLS hides the frames from proxies. Over plain HTTP to another machine the key
 * stays random: what the CLI uploads (a file) may be someone else's bytes.
 */
function maskOf(address: string): ((mask: Buffer) => void) | undefined {
  const { protocol, hostname } = new URL(address);
  const loopback = hostname === "localhost" || hostname === "[::1]" || /^127\./.test(hostname);
  return protocol === "wss:" || loopback ? (mask: Buffer) => void mask.fill(0) : undefined;
}

/** Connects a stream; a refused upgrade becomes the service's message. */
export async function openStream(client: ApiClient, streamUrl: string, onFrame: (frame: Frame) => void): Promise<RemoteStream> {
  const address = streamAddress(client, streamUrl);
  const generateMask = maskOf(address);
  const ws = new WebSocket(address, { perMessageDeflate: false, maxPayload: 64 * 1024 * 1024, ...(generateMask ? { generateMask } : {}) });
  const stream = new RemoteStream(ws, onFrame);
  await new Promise<void>((resolve, reject) => {
    ws.once("open", () => resolve());
    ws.once("unexpected-response", (_req, res) => {
      let body = "";
      res.on("data", (c: Buffer) => (body += c.toString()));
      res.on("end", () => {
        let message = body.trim().slice(0, 300) || `HTTP ${res.statusCode}`;
        try {
          message = (JSON.parse(body) as { message?: string }).message ?? message;
        } catch { /* not JSON */ }
        reject(new CliError(res.statusCode === 401 || res.statusCode === 403 ? EXIT.auth : EXIT.server, `the service refused the stream: ${message}`, { status: res.statusCode }));
      });
    });
    ws.once("error", (err) => reject(new CliError(EXIT.server, `cannot open the session's stream at ${client.server}: ${(err as Error).message}`)));
  });
  return stream;
}

/**
 * Connects the session's first stream. A device can refuse before this side connects (its
 * configuration says no, the remote user is missing): the service then refuses the stream of an
 * ended session, and what the user needs is the device's reason, which the session keeps.
 */
export async function openSessionStream(client: ApiClient, opened: Opened, onFrame: (frame: Frame) => void): Promise<RemoteStream> {
  try {
    return await openStream(client, opened.streamUrl, onFrame);
  } catch (err) {
    if (!(err instanceof CliError) || (err.details as { status?: number } | undefined)?.status !== 401) throw err;
    const session = await client.request<RemoteSession>("GET", `/remote-sessions/${opened.session.id}`).catch(() => null);
    if (session?.state !== "ended") throw err;
    throw new CliError(EXIT.conflict, endReasonText(session.endReason, session.endMessage ?? undefined));
  }
}

/**
 * A status message's meaning for the commands: the exit code, the device's refusal, or something
 * else. The service's own end of a session (`{ error, endReason }`: revoked certificate, force-close,
 * timeout) is no refusal of the device: `error` is left out, and the command says why the session
 * ended from its endReason.
 */
export function readStatus(frame: Frame): { exitCode?: number; error?: string; value: Record<string, unknown> } | null {
  if (frame.channel !== CHANNEL.status) return null;
  const value = statusOf(frame.payload);
  if (!value) return null;
  const endedByService = typeof value.endReason === "string" && value.endReason !== "device-refused";
  return {
    value,
    exitCode: typeof value.exitCode === "number" ? value.exitCode : undefined,
    error: typeof value.error === "string" && !endedByService ? value.error : undefined,
  };
}

/** Exit code of a session that ended with no exit status of its own (as ssh, 255: the connection failed, not the command). */
export const EXIT_SESSION_LOST = 255;
