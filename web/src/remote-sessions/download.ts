// A file from the device into the browser's downloads (a file-read session): the device sends
// a header { size, mode, sha256? }, the bytes on channel 1 and { sha256 } after them; the file
// is saved only when the size and the SHA-256 (computed here as the bytes arrive, @noble/hashes:
// crypto.subtle has no incremental digest and is missing on plain-HTTP origins) match.
import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex } from "@noble/hashes/utils.js";
import { q } from "../api/query";
import { CHANNEL, decode, deviceRefusalOf, endReasonText, statusOf, streamAddress } from "./framing";

export interface Downloaded {
  name: string;
  size: number;
  sha256: string;
}

export async function downloadFromDevice(deviceId: string, path: string, reason: string | undefined, onProgress: (received: number, size: number | null) => void): Promise<Downloaded> {
  const opened = await q.remoteSessions.open.call({ deviceId, kind: "file-read", path, ...(reason ? { reason } : {}) });
  const hash = sha256.create();
  const parts: Uint8Array<ArrayBuffer>[] = [];
  let header: { size: number } | null = null;
  let trailer: string | null = null;
  let refusal: string | null = null;
  let received = 0;
  const ws = new WebSocket(streamAddress(opened.streamUrl, window.location));
  ws.binaryType = "arraybuffer";
  const closed = new Promise<CloseEvent>((resolve) => (ws.onclose = resolve));
  ws.onmessage = (event) => {
    const frame = decode(event.data as ArrayBuffer);
    if (!frame) return;
    if (frame.channel === CHANNEL.stdout) {
      parts.push(frame.payload.slice());
      hash.update(frame.payload);
      received += frame.payload.length;
      onProgress(received, header?.size ?? null);
    } else if (frame.channel === CHANNEL.status) {
      const status = statusOf(frame.payload);
      const refused = deviceRefusalOf(status);
      if (refused !== undefined) refusal = refused;
      else if (!header && typeof status?.size === "number") header = { size: status.size };
      else if (typeof status?.sha256 === "string") {
        trailer = status.sha256;
        ws.close(1000);
      }
    }
  };
  const end = await closed;
  if (refusal !== null) throw new Error(endReasonText("device-refused", refusal));
  if (!header || trailer === null) {
    const session = await q.remoteSessions.get.fetch({ id: opened.session.id }).catch(() => null);
    throw new Error(endReasonText(session?.endReason ?? (end.reason || null)));
  }
  const digest = bytesToHex(hash.digest());
  const size = (header as { size: number }).size;
  if (received !== size) throw new Error(`The copy is incomplete: ${received} of ${size} bytes arrived. Nothing was saved.`);
  if (digest !== trailer) throw new Error(`The copy does not match: SHA-256 ${digest} arrived, the device's is ${trailer}. Nothing was saved.`);
  const name = path.split("/").filter(Boolean).pop() ?? "download";
  const url = URL.createObjectURL(new Blob(parts, { type: "application/octet-stream" }));
  const link = document.createElement("a");
  link.href = url;
  link.download = name;
  link.click();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
  return { name, size, sha256: digest };
}
