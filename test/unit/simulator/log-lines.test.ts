// A simulated device writes each log line once: a batch of the log model (src/simulator/
// log-lines.ts, what `npm run simulate` and the demo's devices send) never holds the same line
// twice. (It drew its one to three lines with replacement: a failing device, whose fault has
// two lines, sent most lines twice, 7 ms apart, and the service stored both.)
import { describe, expect, it } from "vitest";
import { faultOf, LogModel } from "../../../src/simulator/log-lines.js";

const ROUNDS = 300;

/** The batch's lines as "source message", in order. */
const texts = (lines: { source: string; message: string }[]) => lines.map((l) => `${l.source} ${l.message}`);

describe("the simulator's log lines", () => {
  it("a failing device's batch holds each of its fault's lines at most once", () => {
    const model = new LogModel();
    const fault = faultOf("demo-000013");
    const sizes = new Set<number>();
    for (let round = 0; round < ROUNDS; round++) {
      const lines = model.lines(fault, Date.parse("2026-12-07T04:00:00Z"));
      sizes.add(lines.length);
      expect(new Set(texts(lines)).size).toBe(lines.length);
      for (const line of lines) expect(fault.lines.map(([source, , message]) => `${source} ${message}`)).toContain(`${line.source} ${line.message}`);
    }
    expect([...sizes].sort()).toEqual([1, 2]);
  });

  it("a healthy device's batch holds one to three different routine lines, 7 ms apart, ending at `now`", () => {
    const model = new LogModel();
    const now = Date.parse("2026-12-07T04:00:00Z");
    const sizes = new Set<number>();
    for (let round = 0; round < ROUNDS; round++) {
      const lines = model.lines(null, now);
      sizes.add(lines.length);
      // a routine line's number varies: the same line twice differs at most in it
      expect(new Set(texts(lines).map((t) => t.split(/\d/)[0])).size).toBe(lines.length);
      expect(lines.map((l) => Date.parse(l.timestamp))).toEqual(lines.map((_, i) => now - (lines.length - 1 - i) * 7));
      for (const line of lines) expect(["info", "debug"]).toContain(line.level);
    }
    expect([...sizes].sort()).toEqual([1, 2, 3]);
  });
});
