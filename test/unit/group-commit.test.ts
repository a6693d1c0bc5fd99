// The group commit shared by the heartbeat and telemetry writers: what arrives while a
// statement is in flight goes out together, within the row budget and each key once; a
// deadlock is retried; a statement one item breaks is split so that only that item fails.
import { describe, expect, it } from "vitest";
import { GroupCommit } from "../../src/lib/group-commit.js";

interface Item { key: string; rows: number; bad?: boolean }

function recorder(failFirst?: { code: string }) {
  const statements: string[][] = [];
  let pendingFailure = failFirst;
  const write = async (items: Item[]) => {
    await new Promise((r) => setTimeout(r, 5));
    if (pendingFailure) {
      const err = Object.assign(new Error("deadlock detected"), pendingFailure);
      pendingFailure = undefined;
      throw err;
    }
    if (items.some((i) => i.bad)) throw new Error("invalid byte sequence");
    statements.push(items.map((i) => i.key));
    return items.map((i) => `stored ${i.key}`);
  };
  return { statements, write };
}

describe("GroupCommit", () => {
  it("writes the first item at once and what arrives meanwhile together, each answered with its own result", async () => {
    const r = recorder();
    const commit = new GroupCommit<Item, string>({ write: r.write, weightOf: (i) => i.rows }, { maxInFlight: 1, maxBatch: 100 });
    const first = commit.submit({ key: "a", rows: 1 });
    await new Promise((r) => setImmediate(r));
    const rest = ["b", "c", "d"].map((key) => commit.submit({ key, rows: 1 }));
    expect(await Promise.all([first, ...rest])).toEqual(["stored a", "stored b", "stored c", "stored d"]);
    expect(r.statements).toEqual([["a"], ["b", "c", "d"]]);
    expect(commit.stats).toEqual({ rows: 4, statements: 2, largestBatch: 3 });
  });

  it("keeps a statement within the row budget, and sends an item heavier than the budget alone", async () => {
    const r = recorder();
    const commit = new GroupCommit<Item, string>({ write: r.write, weightOf: (i) => i.rows }, { maxInFlight: 1, maxBatch: 10 });
    await Promise.all([
      commit.submit({ key: "a", rows: 6 }), commit.submit({ key: "b", rows: 6 }), commit.submit({ key: "c", rows: 4 }),
      commit.submit({ key: "huge", rows: 25 }), commit.submit({ key: "d", rows: 1 }),
    ]);
    // oldest first: a (6) + c (4) fill the first; b (6) + d (1); then the heavy one alone
    expect(r.statements).toEqual([["a", "c"], ["b", "d"], ["huge"]]);
  });

  it("puts items of one key into different statements", async () => {
    const r = recorder();
    const commit = new GroupCommit<Item, string>({ write: r.write, keyOf: (i) => i.key }, { maxInFlight: 1, maxBatch: 100 });
    await Promise.all([commit.submit({ key: "x", rows: 1 }), commit.submit({ key: "x", rows: 1 }), commit.submit({ key: "y", rows: 1 })]);
    expect(r.statements).toEqual([["x", "y"], ["x"]]);
  });

  it("tries a statement again after a deadlock", async () => {
    const r = recorder({ code: "40P01" });
    const commit = new GroupCommit<Item, string>({ write: r.write }, { maxInFlight: 1, maxBatch: 100 });
    expect(await Promise.all([commit.submit({ key: "a", rows: 1 }), commit.submit({ key: "b", rows: 1 })])).toEqual(["stored a", "stored b"]);
    expect(r.statements).toEqual([["a", "b"]]);
  });

  it("splits a statement one item breaks: the others are stored, only that one fails", async () => {
    const r = recorder();
    const commit = new GroupCommit<Item, string>({ write: r.write }, { maxInFlight: 1, maxBatch: 100 });
    const results = await Promise.allSettled([
      commit.submit({ key: "a", rows: 1 }), commit.submit({ key: "bad", rows: 1, bad: true }), commit.submit({ key: "c", rows: 1 }),
    ]);
    expect(results.map((x) => x.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect((results[1] as PromiseRejectedResult).reason.message).toBe("invalid byte sequence");
    expect(r.statements.flat().sort()).toEqual(["a", "c"]);
  });
});
