// The framing of a remote session's stream (docs/remote-access.md, "Framing", contract):
// binary messages whose first byte is the channel. The console's copy of cli/src/remote/framing.ts
// (the console imports nothing of the CLI); pure, unit-tested in framing.test.ts.

export const CHANNEL = { stdin: 0, stdout: 1, stderr: 2, status: 3, resize: 4, close: 255 } as const;

const encoder = new TextEncoder();

export function encode(channel: number, payload: Uint8Array | string = new Uint8Array(0)): Uint8Array<ArrayBuffer> {
  const body = typeof payload === "string" ? encoder.encode(payload) : payload;
  const frame = new Uint8Array(body.length + 1);
  frame[0] = channel;
  frame.set(body, 1);
  return frame;
}

export const encodeJson = (channel: number, value: unknown) => encode(channel, JSON.stringify(value));

export interface Frame {
  channel: number;
  payload: Uint8Array;
}

export function decode(data: ArrayBuffer): Frame | null {
  const bytes = new Uint8Array(data);
  return bytes.length === 0 ? null : { channel: bytes[0], payload: bytes.subarray(1) };
}

/** A status message (channel 3) as an object, or null when it is not JSON (never throws on a peer's bytes). */
export function statusOf(payload: Uint8Array): Record<string, unknown> | null {
  try {
    const value = JSON.parse(new TextDecoder().decode(payload)) as unknown;
    return value && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/**
 * The device's refusal in a status message, or undefined. The service's own end of a session
 * (`{ error, endReason }`: a revoked certificate, a force-close, a timeout) is not the device's word.
 */
export function deviceRefusalOf(status: Record<string, unknown> | null): string | undefined {
  if (typeof status?.error !== "string") return undefined;
  return typeof status.endReason === "string" && status.endReason !== "device-refused" ? undefined : status.error;
}

/** The WebSocket address of a stream: streamUrl is a path on the console's own origin. */
export function streamAddress(streamUrl: string, location: { protocol: string; host: string }): string {
  return `${location.protocol === "https:" ? "wss:" : "ws:"}//${location.host}${streamUrl}`;
}

/** Why a session ended, as a sentence (endReason of the contract). */
export function endReasonText(reason: string | null | undefined, detail?: string): string {
  switch (reason) {
    case "completed": return "The session ended.";
    case "closed-by-user": return "The session was closed.";
    case "force-closed": return "An administrator closed the session.";
    case "idle-timeout": return "The session was idle for too long (the organization's idle timeout).";
    case "max-duration": return "The session reached the organization's maximum duration.";
    case "device-never-joined": return "The device did not join the session in time: is its agent running, with remote access allowed?";
    case "device-refused": return `The device refused${detail ? `: ${detail}` : "."}`;
    case "device-disconnected": return "The device disconnected.";
    case "certificate-revoked": return "The device's certificate was revoked.";
    case "user-signed-out": return "Your sign-in session ended.";
    case "service-stopped": return "The service stopped.";
    default: return reason ? `The session ended (${reason}).` : "The connection to the service closed.";
  }
}
