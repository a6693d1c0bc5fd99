// The simulator's outbox, with an injected clock: what a device keeps when the service is busy
// (429/503 with Retry-After, an answer that never came) and sends again after the delay, oldest
// first and in batches; what it drops (a batch refused for good, overflow of its capacity).
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { fileStore } from "../../../agent/src/agent.js";
import { Outbox, retryAfterMs, type Delivery } from "../../../agent/src/core/outbox.js";
import { StateDir } from "../../../agent/src/state-dir.js";

function fixture(options: { capacity?: number; batchSize?: number } = {}) {
  const clock = { t: 1_000_000 };
  const outbox = new Outbox<number>({ capacity: options.capacity ?? 100, batchSize: options.batchSize ?? 10, defaultRetryMs: 3000, now: () => clock.t });
  /** the batches the "service" received, and the answers it gives, in order (then 200) */
  const received: number[][] = [];
  const answers: (Delivery | Error)[] = [];
  const send = async (batch: number[]) => {
    received.push([...batch]);
    const answer = answers.shift() ?? { status: 200, headers: {} };
    if (answer instanceof Error) throw answer;
    return answer;
  };
  return { outbox, clock, received, answers, send, advance: (ms: number) => (clock.t += ms) };
}

const busy = (status: number, retryAfter?: string): Delivery => ({ status, headers: retryAfter === undefined ? {} : { "retry-after": retryAfter } });

describe("a busy service", () => {
  it.each([503, 429])("%i with Retry-After: the batch is kept and sent again, with what came since, once the delay is over", async (status) => {
    const { outbox, received, answers, send, advance } = fixture();
    outbox.add([1, 2, 3]);
    answers.push(busy(status, "7"));
    expect(await outbox.flush(send)).toMatchObject({ outcome: "deferred", items: 3, waitMs: 7000, delivery: { status } });
    expect(outbox.size).toBe(3);
    expect(outbox.waitMs()).toBe(7000);

    // more data meanwhile; nothing is sent before the delay is over
    outbox.add([4]);
    advance(6999);
    expect(await outbox.flush(send)).toEqual({ outcome: "idle", items: 0 });
    expect(received).toHaveLength(1);

    advance(1);
    expect(await outbox.flush(send)).toMatchObject({ outcome: "sent", items: 4 });
    expect(received).toEqual([[1, 2, 3], [1, 2, 3, 4]]);
    expect(outbox.size).toBe(0);
    expect({ added: outbox.added, dropped: outbox.dropped }).toEqual({ added: 4, dropped: 0 });
  });

  it("reads Retry-After as an HTTP date too, and waits a default when there is none or no answer at all", async () => {
    const { outbox, clock, answers, send, advance } = fixture();
    outbox.add([1]);
    answers.push(busy(503, new Date(clock.t + 12_000).toUTCString()));
    expect((await outbox.flush(send)).waitMs).toBe(12_000);
    advance(12_000);
    answers.push(busy(503));
    expect((await outbox.flush(send)).waitMs).toBe(3000);
    advance(3000);
    answers.push(new Error("socket hang up"));
    expect(await outbox.flush(send)).toMatchObject({ outcome: "deferred", waitMs: 3000, error: { message: "socket hang up" } });
    advance(3000);
    answers.push(busy(502));
    expect(await outbox.flush(send)).toMatchObject({ outcome: "deferred", waitMs: 3000 });
    expect(outbox.size).toBe(1);
    advance(3000);
    expect((await outbox.flush(send)).outcome).toBe("sent");
    expect(outbox.size).toBe(0);
  });

  it.each([401, 403, 404, 409, 422, 500])("keeps a batch answered %i: only a 2xx forgets one, only a 400 or 413 drops one", async (status) => {
    const { outbox, received, answers, send, advance } = fixture();
    outbox.add([1, 2]);
    answers.push(busy(status));
    expect(await outbox.flush(send)).toMatchObject({ outcome: "deferred", items: 2, waitMs: 3000 });
    expect({ size: outbox.size, dropped: outbox.dropped }).toEqual({ size: 2, dropped: 0 });
    advance(3000);
    expect(await outbox.flush(send)).toMatchObject({ outcome: "sent", items: 2 });
    expect(received).toEqual([[1, 2], [1, 2]]);
  });

  it.each([400, 413])("drops a batch the service refuses for good (%i): no resend can change it", async (status) => {
    const { outbox, answers, send } = fixture({ batchSize: 2 });
    outbox.add([1, 2, 3]);
    answers.push(busy(status));
    expect(await outbox.flush(send)).toMatchObject({ outcome: "dropped", items: 2 });
    expect(outbox.size).toBe(1);
    expect(outbox.dropped).toBe(2);
    expect(outbox.waitMs()).toBe(0);
    expect(await outbox.flush(send)).toMatchObject({ outcome: "sent", items: 1 });
  });
});

describe("batches and capacity", () => {
  it("sends a backlog oldest first in batches of at most batchSize", async () => {
    const { outbox, received, send } = fixture({ batchSize: 4 });
    outbox.add([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    while (outbox.size > 0) await outbox.flush(send);
    expect(received).toEqual([[1, 2, 3, 4], [5, 6, 7, 8], [9, 10]]);
  });

  it("sends one batch at a time; what arrives while one is in flight stays for the next", async () => {
    const { outbox, send } = fixture();
    outbox.add([1, 2]);
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const first = outbox.flush(async (batch) => {
      await gate;
      return send(batch);
    });
    outbox.add([3]);
    expect(await outbox.flush(send)).toEqual({ outcome: "idle", items: 0 });
    release();
    expect(await first).toMatchObject({ outcome: "sent", items: 2 });
    expect(outbox.size).toBe(1);
  });

  it("past its capacity drops the oldest waiting items, never the batch in flight", async () => {
    const { outbox, received, send } = fixture({ capacity: 5, batchSize: 2 });
    outbox.add([1, 2, 3, 4, 5]);
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const inFlight = outbox.flush(async (batch) => {
      await gate;
      return send(batch);
    });
    outbox.add([6, 7]); // 1 and 2 are in flight: 3 and 4 go
    expect(outbox.dropped).toBe(2);
    release();
    await inFlight;
    while (outbox.size > 0) await outbox.flush(send);
    expect(received).toEqual([[1, 2], [5, 6], [7]]);
    expect({ added: outbox.added, dropped: outbox.dropped }).toEqual({ added: 7, dropped: 2 });
  });
});

describe("retryAfterMs", () => {
  it("reads seconds and HTTP dates, and nothing else", () => {
    const now = Date.parse("2026-01-01T00:00:00Z");
    expect(retryAfterMs("5", now)).toBe(5000);
    expect(retryAfterMs(["8"], now)).toBe(8000);
    expect(retryAfterMs("Thu, 01 Jan 2026 00:00:30 GMT", now)).toBe(30_000);
    expect(retryAfterMs("Wed, 31 Dec 2025 23:00:00 GMT", now)).toBe(0);
    expect(retryAfterMs(undefined, now)).toBeNull();
    expect(retryAfterMs("soon", now)).toBeNull();
  });
});

describe("the real agent's outbox on disk (outbox/<name>.json in the state directory)", () => {
  it("survives a restart: what was not answered 2xx is there for the next process, and only a 2xx forgets it", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "outbox-store-"));
    try {
      const state = new StateDir(dir);
      state.ensure();
      const clock = { t: 1_000_000 };
      const open = () => new Outbox<{ n: number }>({ capacity: 100, batchSize: 10, now: () => clock.t, store: fileStore(state, "telemetry") });
      const first = open();
      first.add([{ n: 1 }, { n: 2 }]);
      // the service is busy (503), then the process dies (kill -9: nothing more is written)
      expect((await first.flush(async () => ({ status: 503, headers: { "retry-after": "30" } }))).outcome).toBe("deferred");
      first.add([{ n: 3 }]);
      expect(JSON.parse(fs.readFileSync(path.join(dir, "outbox/telemetry.json"), "utf8"))).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }]);
      // the next process finds all three, oldest first, and forgets them once the service took them
      const second = open();
      expect(second.size).toBe(3);
      const received: unknown[] = [];
      expect((await second.flush(async (batch) => (received.push(...batch), { status: 202, headers: {} })))).toMatchObject({ outcome: "sent", items: 3 });
      expect(received).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }]);
      expect(JSON.parse(fs.readFileSync(path.join(dir, "outbox/telemetry.json"), "utf8"))).toEqual([]);
      expect(open().size).toBe(0);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
