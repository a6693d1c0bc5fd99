/**
 * PEM / DER / hex helpers.
 *
 * We parse PEM ourselves (instead of letting x509 guess the format) so that
 * we can tell the user precisely what is wrong: no PEM at all, a private key
 * pasted into the certificate field, a truncated block, bad base64 ...
 */
import { createHash } from "node:crypto";
import { PkiInputError } from "./errors.js";

/** Uploads are small; refusing huge inputs early keeps parsing cheap. */
export const MAX_PEM_LENGTH = 256 * 1024;

export interface PemBlock {
  /** The label between BEGIN and END, e.g. "CERTIFICATE". */
  label: string;
  der: Uint8Array<ArrayBuffer>;
}

const BLOCK = /-----BEGIN ([A-Z0-9 ]+)-----([\s\S]*?)-----END \1-----/g;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/**
 * Decodes every PEM block of `text`. Text outside the blocks is ignored
 * (OpenSSL writes "subject=..." or "Bag Attributes" lines before blocks).
 * `what` names the input in error messages ("certificate", "private key").
 */
export function decodePemBlocks(text: unknown, what: string): PemBlock[] {
  if (typeof text !== "string" || text.trim() === "") {
    throw new PkiInputError(`${what} is empty`);
  }
  if (text.length > MAX_PEM_LENGTH) {
    throw new PkiInputError(`${what} is too large (more than ${MAX_PEM_LENGTH} characters)`);
  }
  const blocks: PemBlock[] = [];
  for (const match of text.matchAll(BLOCK)) {
    const label = match[1] ?? "";
    const body = match[2] ?? "";
    // RFC 1421 headers only appear in legacy *encrypted* OpenSSL keys.
    if (body.includes(":")) {
      throw new PkiInputError(
        /ENCRYPTED/.test(body)
          ? `${what} is encrypted; provide it without a passphrase`
          : `${what} contains an unsupported PEM header`,
      );
    }
    const base64 = body.replace(/\s+/g, "");
    if (base64 === "" || base64.length % 4 !== 0 || !BASE64.test(base64)) {
      throw new PkiInputError(`${what} contains a PEM block (${label}) with invalid base64`);
    }
    blocks.push({ label, der: new Uint8Array(Buffer.from(base64, "base64")) });
  }
  const begins = text.match(/-----BEGIN /g)?.length ?? 0;
  if (begins !== blocks.length) {
    throw new PkiInputError(`${what} contains a truncated or malformed PEM block`);
  }
  if (blocks.length === 0) {
    throw new PkiInputError(`not a PEM ${what} (no "-----BEGIN ...-----" block found)`);
  }
  return blocks;
}

/**
 * Decodes PEM blocks and insists that they all carry one of `labels`.
 * The first label is the canonical one, used in messages.
 */
export function decodePemBlocksOf(text: unknown, what: string, labels: readonly string[]): Uint8Array<ArrayBuffer>[] {
  return decodePemBlocks(text, what).map((block) => {
    if (!labels.includes(block.label)) {
      throw new PkiInputError(`${what} must be a PEM ${labels[0]}, found a PEM ${block.label} block`);
    }
    return block.der;
  });
}

/** Encodes DER as PEM with 64-character lines and a trailing newline. */
export function toPem(der: ArrayBuffer | Uint8Array, label: string): string {
  const base64 = Buffer.from(toBytes(der)).toString("base64");
  const lines = base64.match(/.{1,64}/g) ?? [];
  return `-----BEGIN ${label}-----\n${lines.join("\n")}\n-----END ${label}-----\n`;
}

export function toBytes(data: ArrayBuffer | ArrayBufferView): Uint8Array {
  return data instanceof ArrayBuffer
    ? new Uint8Array(data)
    : new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
}

/** Copies bytes into a fresh, exactly-sized ArrayBuffer (what WebCrypto and x509 like best). */
export function toArrayBuffer(data: ArrayBuffer | ArrayBufferView): ArrayBuffer {
  const bytes = toBytes(data);
  const copy = new Uint8Array(bytes.byteLength);
  copy.set(bytes);
  return copy.buffer;
}

export function toHex(data: ArrayBuffer | ArrayBufferView): string {
  return Buffer.from(toBytes(data)).toString("hex");
}

export function bytesEqual(a: ArrayBuffer | ArrayBufferView, b: ArrayBuffer | ArrayBufferView): boolean {
  return Buffer.from(toBytes(a)).equals(toBytes(b));
}

/** SHA-256 of DER bytes as lowercase hex without colons (the usual "fingerprint"). */
export function fingerprintOfDer(der: ArrayBuffer | ArrayBufferView): string {
  return createHash("sha256").update(toBytes(der)).digest("hex");
}
