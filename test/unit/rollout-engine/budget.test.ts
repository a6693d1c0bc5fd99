// The disruption budget's arithmetic: the limit per group and the admissions that never
// take a group above it.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { admissions, groupLimit } from "../../../src/modules/rollout-engine/budget.js";

describe("disruption budget", () => {
  it("a count is the limit; a percent is rounded up, at least one", () => {
    expect(groupLimit(50, { count: 3 })).toBe(3);
    expect(groupLimit(50, { percent: 10 })).toBe(5);
    expect(groupLimit(7, { percent: 10 })).toBe(1);
    expect(groupLimit(11, { percent: 10 })).toBe(2);
  });

  it("admits the free places of each group, no more than wait", () => {
    const got = admissions(
      [{ key: '["a"]', size: 10, busy: 1, waiting: 9 }, { key: '["b"]', size: 10, busy: 2, waiting: 5 }, { key: '["c"]', size: 10, busy: 0, waiting: 1 }],
      { groupBy: ["site"], maxUnavailable: { count: 2 } },
    );
    expect([...got]).toEqual([['["a"]', 1], ['["c"]', 1]]);
  });

  it("property: busy plus admitted never exceeds the limit, and a group with room and waiting devices admits one", () => {
    const group = fc.record({ size: fc.integer({ min: 1, max: 500 }), busyShare: fc.double({ min: 0, max: 1, noNaN: true }), waitingShare: fc.double({ min: 0, max: 1, noNaN: true }) });
    const budget = fc.oneof(fc.record({ count: fc.integer({ min: 1, max: 50 }) }), fc.record({ percent: fc.double({ min: 0.1, max: 100, noNaN: true }) }));
    fc.assert(
      fc.property(fc.array(group, { maxLength: 20 }), budget, (groups, maxUnavailable) => {
        const loads = groups.map((g, i) => {
          const limit = groupLimit(g.size, maxUnavailable);
          const busy = Math.min(g.size, Math.floor(g.busyShare * limit));
          return { key: String(i), size: g.size, busy, waiting: Math.floor(g.waitingShare * (g.size - busy)) };
        });
        const got = admissions(loads, { groupBy: ["site"], maxUnavailable });
        for (const l of loads) {
          const admitted = got.get(l.key) ?? 0;
          const limit = groupLimit(l.size, maxUnavailable);
          expect(l.busy + admitted).toBeLessThanOrEqual(Math.max(limit, l.busy));
          expect(admitted).toBeLessThanOrEqual(l.waiting);
          if (l.busy < limit && l.waiting > 0) expect(admitted).toBeGreaterThan(0);
        }
      }),
    );
  });
});
