import { describe, expect, it } from "vitest";
import { changedFields } from "../../../src/trpc/audit";
import { changeRows } from "./changes";

describe("changeRows", () => {
  it("reads the service's update diff as before and after", () => {
    const diff = changedFields({ name: "Old", labels: { a: "1" } }, { name: "New", labels: { a: "2" } });
    expect(changeRows(diff)).toEqual([
      { field: "name", from: "Old", to: "New" },
      { field: "labels", from: '{"a":"1"}', to: '{"a":"2"}' },
    ]);
  });

  it("reads a creation's input as values", () => {
    expect(changeRows({ name: "Lab", maxUses: 12, labels: { site: "lab" } })).toEqual([
      { field: "name", to: "Lab" },
      { field: "maxUses", to: "12" },
      { field: "labels", to: '{"site":"lab"}' },
    ]);
  });

  it("has no rows without changes", () => {
    expect(changeRows(null)).toEqual([]);
    expect(changeRows(undefined)).toEqual([]);
  });
});
