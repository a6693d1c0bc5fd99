// ssh's escape: `~.` typed at the start of a line leaves the session, `~~` sends one `~`.
// The line start is after Enter (a terminal in raw mode sends \r; a pipe sends \n) or at the
// very beginning. Pure, so it is tested alone (test/cli/remote-escape.test.ts).

export interface Filtered {
  /** the bytes to send to the device */
  forward: Buffer;
  /** `~.` was typed: leave */
  leave: boolean;
}

export class EscapeFilter {
  private atLineStart = true;
  private heldTilde = false;

  push(chunk: Buffer): Filtered {
    const out: number[] = [];
    for (const byte of chunk) {
      if (this.heldTilde) {
        this.heldTilde = false;
        if (byte === 0x2e /* . */) return { forward: Buffer.from(out), leave: true };
        if (byte === 0x7e /* ~ */) {
          out.push(0x7e);
          this.atLineStart = false;
          continue;
        }
        out.push(0x7e); // not an escape: the tilde was meant for the device
      } else if (this.atLineStart && byte === 0x7e) {
        this.heldTilde = true;
        continue;
      }
      out.push(byte);
      this.atLineStart = byte === 0x0d || byte === 0x0a;
    }
    return { forward: Buffer.from(out), leave: false };
  }
}
