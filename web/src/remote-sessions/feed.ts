// Output of a remote session into xterm.js without freezing the page (xterm.js's flow-control
// guide): xterm parses some 5 to 35 MB/s and its own write buffer would take everything given to
// it. So at most HIGH bytes are handed to write() and not yet parsed (its callback says when);
// beyond that, messages wait here, and they go on once the terminal is under LOW again.
//
// A browser cannot pause a WebSocket (the page reads every message the socket delivers; there is
// no way to stop reading and let TCP push back to the relay). So what waits here is bounded: past
// MAX_QUEUED bytes, further output is dropped and counted, and the page says so, instead of the
// tab's memory growing without bound under `cat /dev/urandom | base64`. The service's memory is
// bounded either way (its relay pauses the device's leg above 1 MiB of the browser's leg).

export const HIGH_WATERMARK = 512 * 1024;
export const LOW_WATERMARK = 64 * 1024;
export const MAX_QUEUED = 16 * 1024 * 1024;

export interface TerminalWriter {
  write(data: Uint8Array, parsed: () => void): void;
}

export class OutputFeed {
  private inTerminal = 0;
  private queue: Uint8Array[] = [];
  private queued = 0;
  /** bytes dropped because the terminal could not keep up */
  dropped = 0;

  constructor(private readonly terminal: TerminalWriter, private readonly onDropped: (total: number) => void = () => {}) {}

  get waiting(): number {
    return this.queued;
  }

  push(data: Uint8Array): void {
    if (this.queue.length === 0 && this.inTerminal < HIGH_WATERMARK) return this.write(data);
    if (this.queued + data.length > MAX_QUEUED) {
      this.dropped += data.length;
      this.onDropped(this.dropped);
      return;
    }
    // a copy: the message's buffer may be a view of a larger one
    this.queue.push(data.slice());
    this.queued += data.length;
  }

  private write(data: Uint8Array): void {
    this.inTerminal += data.length;
    this.terminal.write(data, () => {
      this.inTerminal -= data.length;
      if (this.inTerminal <= LOW_WATERMARK) this.flush();
    });
  }

  private flush(): void {
    while (this.queue.length > 0 && this.inTerminal < HIGH_WATERMARK) {
      const next = this.queue.shift()!;
      this.queued -= next.length;
      this.write(next);
    }
  }
}
