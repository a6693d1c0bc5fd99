// The admission gate of ingest (src/lib/admission.ts): turns, a first-come-first-served queue,
// refusals when it is full or a wait is too long, waiters that leave, and the jittered Retry-After.
import { afterEach, describe, expect, it, vi } from "vitest";
import { AdmissionGate, retryAfterWithJitter, type Admission } from "../../src/lib/admission.js";

const admitted = (a: Admission) => {
  if (!a.admitted) throw new Error(`refused: ${a.reason}`);
  return a.release;
};

afterEach(() => vi.useRealTimers());

describe("AdmissionGate", () => {
  it("admits `concurrency` at once, queues `queueLength`, refuses the next at once, and hands turns over in arrival order", async () => {
    const gate = new AdmissionGate({ concurrency: 2, queueLength: 2, queueTimeoutMs: 60_000 });
    const first = admitted(await gate.enter());
    const second = admitted(await gate.enter());
    const order: string[] = [];
    const third = gate.enter().then((a) => (order.push("third"), admitted(a)));
    const fourth = gate.enter().then((a) => (order.push("fourth"), admitted(a)));
    expect({ inFlight: gate.inFlight, queued: gate.queued }).toEqual({ inFlight: 2, queued: 2 });
    expect(await gate.enter()).toEqual({ admitted: false, reason: "queue-full" });

    first();
    first(); // releasing twice gives back one turn only
    const releaseThird = await third;
    expect({ inFlight: gate.inFlight, queued: gate.queued }).toEqual({ inFlight: 2, queued: 1 });
    second();
    const releaseFourth = await fourth;
    expect(order).toEqual(["third", "fourth"]);
    releaseThird();
    releaseFourth();
    expect({ inFlight: gate.inFlight, queued: gate.queued }).toEqual({ inFlight: 0, queued: 0 });
  });

  it("refuses a waiter after queueTimeoutMs, and frees its place", async () => {
    vi.useFakeTimers();
    const gate = new AdmissionGate({ concurrency: 1, queueLength: 1, queueTimeoutMs: 2000 });
    const holder = admitted(await gate.enter());
    const waiting = gate.enter();
    await vi.advanceTimersByTimeAsync(1999);
    expect(gate.queued).toBe(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(await waiting).toEqual({ admitted: false, reason: "queue-timeout" });
    expect(gate.queued).toBe(0);
    holder();
    expect(gate.inFlight).toBe(0);
  });

  it("lets a waiter leave (its client hung up): the turn goes to the next one", async () => {
    const gate = new AdmissionGate({ concurrency: 1, queueLength: 2, queueTimeoutMs: 60_000 });
    const holder = admitted(await gate.enter());
    const leaving = new AbortController();
    const left = gate.enter(leaving.signal);
    const next = gate.enter();
    leaving.abort();
    expect(await left).toEqual({ admitted: false, reason: "abandoned" });
    expect(gate.queued).toBe(1);
    holder();
    admitted(await next)();
    expect(gate.inFlight).toBe(0);
    expect(await gate.enter(AbortSignal.abort())).toEqual({ admitted: false, reason: "abandoned" });
  });

  it("with queueLength 0 refuses whenever every turn is taken", async () => {
    const gate = new AdmissionGate({ concurrency: 1, queueLength: 0, queueTimeoutMs: 1000 });
    const holder = admitted(await gate.enter());
    expect(await gate.enter()).toEqual({ admitted: false, reason: "queue-full" });
    holder();
    admitted(await gate.enter())();
  });
});

describe("retryAfterWithJitter", () => {
  it("answers the base plus up to as much again, whole seconds", () => {
    expect(retryAfterWithJitter(5, () => 0)).toBe(5);
    expect(retryAfterWithJitter(5, () => 0.5)).toBe(8);
    expect(retryAfterWithJitter(5, () => 0.999999)).toBe(10);
    expect(retryAfterWithJitter(1, () => 0.6)).toBe(2);
  });
});
