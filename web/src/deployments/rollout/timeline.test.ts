import { describe, expect, it } from "vitest";
import { judgeBatch } from "../../../../src/modules/deployments/rollout-machine";
import { batchSegments, clockRuns, failureLimit, outcomeText, thresholdLines, timeLeft, type Batch } from "./timeline";

const counts = { pending: 3, downloading: 2, installing: 1, running: 4, failed: 2, waitingToRetry: 1, waitingForWindow: 1, waitingForBudget: 0, offline: 2, cancelled: 3, superseded: 1, removed: 1, skipped: 0 };

describe("batch segments", () => {
  it("puts every device of the batch in one segment, running first and failed last", () => {
    const segments = batchSegments(counts);
    expect(segments.reduce((sum, s) => sum + s.value, 0)).toBe(21);
    expect(segments[0].key).toBe("running");
    expect(segments.at(-1)!.key).toBe("failed");
    expect(segments.find((s) => s.key === "waiting")!.value).toBe(2);
  });

  it("names each state as itself: cancelled devices are cancelled, offline ones offline, none of them skipped", () => {
    const value = (key: string) => batchSegments(counts).find((s) => s.key === key)!.value;
    expect([value("cancelled"), value("offline"), value("superseded"), value("removed"), value("skipped")]).toEqual([3, 2, 1, 1, 0]);
  });
});

describe("threshold lines", () => {
  it("places the success line at the devices needed and the failure line from the right", () => {
    expect(thresholdLines({ size: 10, successTarget: 8 }, 30)).toEqual({ success: 80, failure: 70 });
    // 1 failure of 2 is 50%, over a 30% threshold: the line stands one device from the right
    expect(thresholdLines({ size: 2, successTarget: 2 }, 30)).toEqual({ success: 100, failure: 50 });
    expect(thresholdLines({ size: 0, successTarget: 1 }, 20)).toEqual({ success: 100, failure: 0 });
  });

  it("names the number of failures at which the service pauses", () => {
    for (const size of [1, 2, 5, 11, 40]) {
      for (const threshold of [1, 20, 30, 33.3, 50, 100]) {
        const limit = failureLimit(size, threshold);
        const judge = (failed: number) => judgeBatch({ index: 1, size, running: 0, failed, failureAccepted: false, deadlinePassed: false }, { successThreshold: 100, failureThreshold: threshold }).kind;
        if (limit <= size) expect(judge(limit), `${size} ${threshold}`).toBe("failure_threshold");
        expect(judge(limit - 1), `${size} ${threshold}`).not.toBe("failure_threshold");
      }
    }
  });
});

describe("time left", () => {
  const now = Date.parse("2026-01-01T00:00:00Z");
  it("counts down to the deadline", () => {
    expect(timeLeft("2026-01-01T01:02:03Z", now)).toBe("1 h 2 min left");
    expect(timeLeft("2026-01-01T00:02:03Z", now)).toBe("2 min 3 s left");
    expect(timeLeft("2026-01-01T00:00:09.500Z", now)).toBe("10 s left");
    expect(timeLeft("2025-12-31T23:59:59Z", now)).toBe("timeout reached");
  });

  it("runs only for the batch in flight of a moving rollout", () => {
    const batch = { index: 1, state: "in_progress" as const, deadlineAt: "2026-01-01T01:00:00Z" };
    expect(clockRuns({ state: "in_progress", currentBatch: 1 }, batch)).toBe(true);
    expect(clockRuns({ state: "paused", currentBatch: 1 }, batch)).toBe(false);
    expect(clockRuns({ state: "in_progress", currentBatch: 2 }, batch)).toBe(false);
    expect(clockRuns({ state: "awaiting_approval", currentBatch: 1 }, { ...batch, state: "succeeded" })).toBe(false);
  });
});

describe("a batch's outcome in words", () => {
  it("says how a batch ended without counts of its own: the page's numbers are the batch's counts", () => {
    const at = "2026-12-07T10:02:00.000Z";
    const base = { at, running: 2, failed: 2, size: 3, successTarget: 3, summary: "promoted below its success target (3 running needed) by alice@example.com" };
    const promoted = { ...base, kind: "promoted", move: "promote", by: "alice@example.com" } as NonNullable<Batch["outcome"]>;
    expect(outcomeText(promoted)).toBe("promoted below its success target (3 running needed) by alice@example.com");
    expect(outcomeText({ ...promoted, kind: "cancelled", move: "abort" })).toBe("cancelled: the rollout was aborted by alice@example.com");
    expect(outcomeText({ ...promoted, kind: "succeeded", move: null, by: null })).toBe("reached its success target (3 running)");
    expect(outcomeText({ ...promoted, kind: "failed", move: null, by: null })).toBe("timed out below its success target (3 running needed)");
  });
});
