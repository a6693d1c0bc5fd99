import { describe, expect, it } from "vitest";
import { emptyFollowBuffer, FOLLOW_CAP, pause, receive, resume, type FollowBuffer } from "./follow-buffer";
import type { LogLine } from "./logs";

const line = (id: number): LogLine => ({ id: String(id), deviceId: "d", timestamp: new Date(id * 1000).toISOString(), level: "info", source: "agent", message: `line ${id}` });
const lines = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => line(from + i));
const ids = (b: FollowBuffer) => b.lines.map((l) => Number(l.id));

describe("follow buffer", () => {
  it("shows lines as they arrive and remembers the newest id", () => {
    const b = receive(receive(emptyFollowBuffer, lines(1, 3)), lines(4, 5));
    expect(ids(b)).toEqual([1, 2, 3, 4, 5]);
    expect(b.lastId).toBe("5");
  });

  it("skips lines it already holds (a reconnect replaying them), comparing ids as numbers", () => {
    const b = receive(receive(emptyFollowBuffer, [line(9), line(10)]), [line(9), line(10), line(11)]);
    expect(ids(b)).toEqual([9, 10, 11]);
    const same = receive(b, [line(2)]);
    expect(same).toBe(b);
  });

  it(`keeps at most ${FOLLOW_CAP} lines, the newest, and counts those it let go`, () => {
    let b = receive(emptyFollowBuffer, lines(1, 1500));
    b = receive(b, lines(1501, 2600));
    expect(b.lines).toHaveLength(FOLLOW_CAP);
    expect(b.lines[0].id).toBe("601");
    expect(b.lines.at(-1)!.id).toBe("2600");
    expect(b.dropped).toBe(600);
  });

  it("while paused, counts new lines without showing them; resuming shows them", () => {
    let b = pause(receive(emptyFollowBuffer, lines(1, 3)));
    b = receive(b, lines(4, 6));
    expect(ids(b)).toEqual([1, 2, 3]);
    expect(b.heldCount).toBe(3);
    b = resume(b);
    expect(ids(b)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(b).toMatchObject({ paused: false, heldCount: 0, held: [], dropped: 0 });
  });

  it("holds at most the cap while paused for long, still counting every line, and resumes to the newest", () => {
    let b = pause(receive(emptyFollowBuffer, lines(1, 10), 5));
    expect(ids(b)).toEqual([6, 7, 8, 9, 10]);
    b = receive(b, lines(11, 30), 5);
    expect(b.heldCount).toBe(20);
    expect(b.held).toHaveLength(5);
    b = resume(b, 5);
    expect(ids(b)).toEqual([26, 27, 28, 29, 30]);
    // 5 cut before the pause, 5 shown ones and 15 held ones that never made it into view
    expect(b.dropped).toBe(5 + 5 + 15);
  });
});
