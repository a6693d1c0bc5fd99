// The framing of a remote-access stream (docs/remote-access.md, "Framing", the contract): one
// binary WebSocket message per frame, its first byte the channel (Kubernetes remotecommand v5
// numbering), the rest the payload.
export const STDIN = 0;
export const STDOUT = 1;
export const STDERR = 2;
/** UTF-8 JSON: exit code, error, file header and digest */
export const STATUS = 3;
/** JSON { cols, rows }, to the device */
export const RESIZE = 4;
/** the next byte names the channel that is half-closed ([255, 0]: end of stdin / of the upload) */
export const CLOSE = 255;

export function frame(channel: number, payload: Buffer | string): Buffer {
  const body = typeof payload === "string" ? Buffer.from(payload, "utf8") : payload;
  const out = Buffer.allocUnsafe(body.length + 1);
  out[0] = channel;
  body.copy(out, 1);
  return out;
}

export function statusFrame(status: Record<string, unknown>): Buffer {
  return frame(STATUS, JSON.stringify(status));
}

export function closeFrame(channel: number): Buffer {
  return Buffer.from([CLOSE, channel]);
}

export interface Frame {
  channel: number;
  payload: Buffer;
}

/** A received message as a frame; null for an empty one (nothing to say). */
export function parseFrame(data: Buffer | ArrayBuffer | Buffer[]): Frame | null {
  const buffer = Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data);
  if (buffer.length === 0) return null;
  return { channel: buffer[0], payload: buffer.subarray(1) };
}
