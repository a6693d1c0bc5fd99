// The pure parts of the request boundary for strings PostgreSQL cannot store.
import { describe, expect, it } from "vitest";
import { findUnstorableString, matchesPattern, repairUnstorableText, storableText, unstorableProblemOf } from "../../src/lib/unstorable-strings.js";

describe("unstorableProblemOf", () => {
  it("finds NUL characters and unpaired surrogates, not surrogate pairs", () => {
    expect(unstorableProblemOf("a\u0000b")).toMatch(/NUL character \(U\+0000\)/);
    expect(unstorableProblemOf("\ud800x")).toMatch(/unpaired UTF-16 surrogate \(U\+D800\)/);
    expect(unstorableProblemOf("x\udc00")).toMatch(/U\+DC00/);
    expect(unstorableProblemOf("\udc00\ud800")).toMatch(/U\+DC00/); // a low before a high is no pair
    expect(unstorableProblemOf("rocket \ud83d\ude80, é, \u0001, \uffff")).toBeNull();
  });
});

describe("findUnstorableString", () => {
  it("names the first offending value or key in document order, with its path", () => {
    const body = { name: "ok", labels: { site: "lab", "ro\u0000om": "1" }, items: [{ a: "fine" }, { a: "bad\ud800" }] };
    expect(findUnstorableString(body)).toEqual({ path: ["labels", "ro\u0000om"], inKey: true, problem: expect.stringMatching(/^the key contains a NUL/) });
    delete (body.labels as Record<string, string>)["ro\u0000om"];
    expect(findUnstorableString(body)).toEqual({ path: ["items", 1, "a"], inKey: false, problem: expect.stringMatching(/U\+D800/) });
    expect(findUnstorableString("\u0000")).toEqual({ path: [], inKey: false, problem: expect.any(String) });
    expect(findUnstorableString({ a: [1, true, null, "x"], b: { c: 2.5 } })).toBeNull();
  });

  it("walks any depth JSON.parse accepts without exhausting the stack", () => {
    const depth = 200_000;
    const nested = JSON.parse(`${"[".repeat(depth)}"\\u0000"${"]".repeat(depth)}`);
    expect(findUnstorableString(nested)?.path).toHaveLength(depth);
  });

  it("passes over tolerated paths and goes on to the next offending string", () => {
    const body = { entries: [{ message: "a\u0000" }, { message: "\ud800", source: "s\u0000" }] };
    const tolerated = (path: (string | number)[]) => matchesPattern(path, ["entries", "*", "message"]);
    expect(findUnstorableString(body, tolerated)?.path).toEqual(["entries", 1, "source"]);
  });
});

describe("repairUnstorableText", () => {
  it("replaces, one for one, NUL and unpaired surrogates by U+FFFD at the pattern's strings only", () => {
    const body = { entries: [{ message: "a\u0000b\ud800c 🚀", source: "s\u0000" }, { message: 42 }, "x\u0000"], other: "o\u0000" };
    repairUnstorableText(body, ["entries", "*", "message"]);
    expect(body).toEqual({ entries: [{ message: "a\ufffdb\ufffdc 🚀", source: "s\u0000" }, { message: 42 }, "x\u0000"], other: "o\u0000" });
    expect(storableText("\udc00\u0000")).toBe("\ufffd\ufffd");
  });
});
