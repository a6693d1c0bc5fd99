// The framing of a remote session's stream (docs/remote-access.md, "Framing", contract):
// binary WebSocket messages whose first byte is the channel, Kubernetes remotecommand v5
// numbering. Kept free of I/O so that the commands and the tests share one reading of it.

export const CHANNEL = {
  /** stdin, upload bytes, TCP bytes to the device */
  stdin: 0,
  /** stdout, download bytes, TCP bytes from the device */
  stdout: 1,
  stderr: 2,
  /** JSON: { exitCode } | { error } | a file's header and trailer */
  status: 3,
  /** JSON { cols, rows }, to the device */
  resize: 4,
  /** the next byte names the channel that is half-closed ([255, 0]: end of stdin) */
  close: 255,
} as const;

export interface Frame {
  channel: number;
  payload: Buffer;
}

export function encode(channel: number, payload: Uint8Array | string = Buffer.alloc(0)): Buffer {
  const body = typeof payload === "string" ? Buffer.from(payload, "utf8") : payload;
  const frame = Buffer.allocUnsafe(body.length + 1);
  frame[0] = channel;
  frame.set(body, 1);
  return frame;
}

export const encodeJson = (channel: number, value: unknown) => encode(channel, JSON.stringify(value));

/** `[255, channel]`: no more bytes on `channel` (end of stdin, of an upload, of a TCP half). */
export const halfClose = (channel: number) => Buffer.from([CHANNEL.close, channel]);

export function decode(message: Buffer | ArrayBuffer | Buffer[]): Frame | null {
  const data = Buffer.isBuffer(message) ? message : Array.isArray(message) ? Buffer.concat(message) : Buffer.from(message);
  if (data.length === 0) return null;
  return { channel: data[0], payload: data.subarray(1) };
}

/** A status message (channel 3): JSON, or null when it does not parse (never throws on a peer's bytes). */
export function statusOf(payload: Buffer): Record<string, unknown> | null {
  try {
    const value = JSON.parse(payload.toString("utf8")) as unknown;
    return value && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}
