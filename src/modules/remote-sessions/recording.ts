// A shell session's output as asciicast v2 (https://docs.asciinema.org/manual/asciicast/v2/):
// a header line, then one JSON line per event ([seconds, "o", text] for output,
// [seconds, "r", "COLSxROWS"] for a resize). Kept in memory up to the organization's
// recordingMaxBytes and stored when the stream ends. Past the cap the recording stops (a
// last marker line says so) and the session goes on.
import type { Services } from "../../services.js";

export const ASCIICAST_TYPE = "application/x-asciicast";

export class Recorder {
  private readonly chunks: Buffer[] = [];
  private bytes = 0;
  truncated = false;
  private readonly startedAt = Date.now();

  constructor(
    readonly sessionId: string,
    private readonly maxBytes: number,
    cols: number,
    rows: number,
  ) {
    this.append(JSON.stringify({ version: 2, width: cols, height: rows, timestamp: Math.floor(this.startedAt / 1000), env: { TERM: "xterm-256color" } }));
  }

  private elapsed() {
    return Math.round((Date.now() - this.startedAt) / 1000 * 1e6) / 1e6;
  }

  private append(line: string) {
    if (this.truncated) return;
    const data = Buffer.from(line + "\n");
    if (this.bytes + data.length > this.maxBytes) {
      this.truncated = true;
      const marker = Buffer.from(JSON.stringify([this.elapsed(), "m", "recording stopped: size limit reached"]) + "\n");
      if (this.bytes + marker.length <= this.maxBytes) {
        this.chunks.push(marker);
        this.bytes += marker.length;
      }
      return;
    }
    this.chunks.push(data);
    this.bytes += data.length;
  }

  output(text: string) {
    if (text) this.append(JSON.stringify([this.elapsed(), "o", text]));
  }

  resize(body: Buffer) {
    try {
      const size = JSON.parse(body.toString()) as { cols?: unknown; rows?: unknown };
      if (Number.isInteger(size.cols) && Number.isInteger(size.rows)) this.append(JSON.stringify([this.elapsed(), "r", `${size.cols}x${size.rows}`]));
    } catch {
      // a resize the device cannot read either
    }
  }

  private stored = false;

  async finish(services: Services) {
    if (this.stored) return;
    this.stored = true;
    const data = Buffer.concat(this.chunks).toString("base64");
    // Through the driver as base64: Prisma's Bytes refused some Buffers here (a pooled slice).
    await services.prisma.$executeRaw`
      INSERT INTO "RemoteSessionRecording" ("sessionId", "data", "bytes", "truncated", "updatedAt")
      VALUES (${this.sessionId}::uuid, decode(${data}, 'base64'), ${this.bytes}, ${this.truncated}, now())
      ON CONFLICT ("sessionId") DO UPDATE SET "data" = EXCLUDED."data", "bytes" = EXCLUDED."bytes", "truncated" = EXCLUDED."truncated", "updatedAt" = now()`;
  }
}
