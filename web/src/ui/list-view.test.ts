import { describe, expect, it } from "vitest";
import { listView } from "./list-view";

describe("listView: one view at a time", () => {
  it("an error wins over everything, even rows kept from before", () => {
    expect(listView({ isError: true, isPending: false }, [1, 2])).toBe("error");
    expect(listView({ isError: true, isPending: true }, undefined)).toBe("error");
  });
  it("loading until there are rows to show", () => {
    expect(listView({ isError: false, isPending: true }, undefined)).toBe("loading");
    expect(listView({ isError: false, isPending: false }, undefined)).toBe("loading");
  });
  it("empty says whether filters hide rows", () => {
    expect(listView({ isError: false, isPending: false }, [])).toBe("empty");
    expect(listView({ isError: false, isPending: false }, [], true)).toBe("filtered-empty");
  });
  it("rows otherwise", () => {
    expect(listView({ isError: false, isPending: false }, [1], true)).toBe("rows");
  });
});
