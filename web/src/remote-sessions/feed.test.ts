// The terminal's output flow control: at most HIGH bytes handed to xterm.js unparsed, the rest
// queued in order, flushed under LOW, and dropped (counted) only past MAX_QUEUED.
import { describe, expect, it } from "vitest";
import { HIGH_WATERMARK, LOW_WATERMARK, MAX_QUEUED, OutputFeed } from "./feed";
import { parseCast, schedule } from "./asciicast";
import { decode, encode, encodeJson, statusOf, streamAddress } from "./framing";

/** A terminal that parses only when told to. */
function slowTerminal() {
  const pending: Array<{ data: Uint8Array; parsed: () => void }> = [];
  const written: number[] = [];
  return {
    pending,
    written,
    write(data: Uint8Array, parsed: () => void) {
      written.push(data[0]);
      pending.push({ data, parsed });
    },
    parseAll() {
      while (pending.length) pending.shift()!.parsed();
    },
  };
}

const chunk = (id: number, size = 64 * 1024) => new Uint8Array(size).fill(id);

describe("OutputFeed", () => {
  it("hands output to the terminal until HIGH is unparsed, then queues it, in order", () => {
    const terminal = slowTerminal();
    const feed = new OutputFeed(terminal);
    const perHigh = HIGH_WATERMARK / (64 * 1024);
    for (let i = 0; i < perHigh + 4; i++) feed.push(chunk(i % 256));
    expect(terminal.written).toHaveLength(perHigh);
    expect(feed.waiting).toBe(4 * 64 * 1024);
    // parsing brings the unparsed bytes under LOW: the queue goes on, in order
    while (terminal.pending.length) terminal.pending.shift()!.parsed();
    terminal.parseAll();
    expect(terminal.written).toEqual(Array.from({ length: perHigh + 4 }, (_, i) => i % 256));
    expect(feed.waiting).toBe(0);
    expect(LOW_WATERMARK).toBeLessThan(HIGH_WATERMARK);
  });

  it("drops what would queue past MAX_QUEUED and says how much", () => {
    const terminal = slowTerminal();
    const reports: number[] = [];
    const feed = new OutputFeed(terminal, (n) => reports.push(n));
    const total = HIGH_WATERMARK + MAX_QUEUED + 3 * 64 * 1024;
    for (let sent = 0; sent < total; sent += 64 * 1024) feed.push(chunk(1));
    expect(feed.dropped).toBe(3 * 64 * 1024);
    expect(reports.at(-1)).toBe(3 * 64 * 1024);
    expect(feed.waiting).toBe(MAX_QUEUED);
  });
});

describe("framing", () => {
  it("puts the channel first and reads it back; a status is JSON or null", () => {
    const frame = encode(0, "ls\r");
    expect([...frame]).toEqual([0, 108, 115, 13]);
    expect(decode(encodeJson(4, { cols: 80, rows: 24 }).buffer)).toEqual({ channel: 4, payload: new TextEncoder().encode('{"cols":80,"rows":24}') });
    expect(statusOf(new TextEncoder().encode('{"exitCode":3}'))).toEqual({ exitCode: 3 });
    expect(statusOf(new TextEncoder().encode("not json"))).toBeNull();
    expect(streamAddress("/api/v1/remote-sessions/x/stream?ticket=t", { protocol: "https:", host: "fleet.example.com" })).toBe("wss://fleet.example.com/api/v1/remote-sessions/x/stream?ticket=t");
  });
});

describe("asciicast v2", () => {
  it("reads output and resizes, skips a damaged last line, and shortens long pauses", () => {
    const cast = parseCast([
      JSON.stringify({ version: 2, width: 100, height: 30 }),
      JSON.stringify([0.5, "o", "$ "]),
      JSON.stringify([1.0, "i", "ls\r"]),
      JSON.stringify([1.2, "r", "120x40"]),
      JSON.stringify([30.2, "o", "done\r\n"]),
      '[31.0, "o", "cut at the ca',
    ].join("\n"));
    expect(cast).toMatchObject({ width: 100, height: 30, skipped: 1 });
    expect(cast.events).toEqual([{ at: 0.5, type: "o", data: "$ " }, { at: 1.2, type: "r", cols: 120, rows: 40 }, { at: 30.2, type: "o", data: "done\r\n" }]);
    expect(schedule(cast.events)).toEqual([500, 1200, 3200]);
    expect(schedule(cast.events, 4)).toEqual([125, 300, 800]);
    expect(() => parseCast('{"version":1}')).toThrow(/asciicast v2/);
  });
});
