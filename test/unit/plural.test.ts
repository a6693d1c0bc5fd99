import { describe, expect, it } from "vitest";
import { counted, plural } from "../../src/lib/plural.js";

describe("plural and counted", () => {
  it("say one thing in the singular and every other count in the plural", () => {
    expect(counted(1, "account")).toBe("1 account");
    expect(counted(0, "account")).toBe("0 accounts");
    expect(counted(2, "container")).toBe("2 containers");
    expect(counted(1.5, "day")).toBe("1.5 days");
    expect(counted(-1, "degree")).toBe("-1 degree");
    expect(counted(12_345, "device")).toBe("12,345 devices");
  });

  it("take an irregular plural", () => {
    expect(counted(1, "entry", "entries")).toBe("1 entry");
    expect(counted(4, "entry", "entries")).toBe("4 entries");
    expect(plural(1, "batch", "batches")).toBe("batch");
    expect(plural(2, "batch", "batches")).toBe("batches");
  });
});
