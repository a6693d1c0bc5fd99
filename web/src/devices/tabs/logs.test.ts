import { describe, expect, it } from "vitest";
import { filterKey, formatLevels, logFilterOf, logStreamUrl, parseLevels } from "./logs";

describe("log levels in the URL", () => {
  it("keeps known levels in severity order, once each", () => {
    expect(parseLevels("error,warn")).toEqual(["warn", "error"]);
    expect(parseLevels(" ERROR ,loud,error,fatal")).toEqual(["error", "fatal"]);
  });

  it("means every level when none, only unknown ones, or all of them are named", () => {
    expect(parseLevels(undefined)).toBeUndefined();
    expect(parseLevels("")).toBeUndefined();
    expect(parseLevels("verbose")).toBeUndefined();
    expect(parseLevels("debug,info,warn,error,fatal")).toBeUndefined();
  });

  it("writes a selection back in its canonical form", () => {
    expect(formatLevels(["fatal", "warn"])).toBe("warn,fatal");
    expect(formatLevels([])).toBeUndefined();
    expect(formatLevels(["debug", "info", "warn", "error", "fatal"])).toBeUndefined();
  });
});

describe("logFilterOf", () => {
  it("turns the URL's filters into the API's input", () => {
    expect(logFilterOf({ level: "error", source: "kernel", search: "  disk full " })).toEqual({ level: ["error"], source: "kernel", q: "disk full" });
    expect(logFilterOf({})).toEqual({ level: undefined, source: undefined, q: undefined });
    expect(logFilterOf({ source: "", search: "   " })).toEqual({ level: undefined, source: undefined, q: undefined });
    expect(logFilterOf({ search: "x".repeat(250) }).q).toHaveLength(200);
  });

  it("gives equal filters equal keys, and different ones different keys", () => {
    expect(filterKey(logFilterOf({ level: "warn,error" }))).toBe(filterKey(logFilterOf({ level: "error,warn" })));
    expect(filterKey(logFilterOf({ level: "warn" }))).not.toBe(filterKey(logFilterOf({ level: "error" })));
    expect(filterKey(logFilterOf({ source: "a" }))).not.toBe(filterKey(logFilterOf({ search: "a" })));
  });
});

describe("logStreamUrl", () => {
  const id = "4f1c2a9e-0000-4000-8000-000000000001";
  it("asks for the tail with every filter, levels repeated as the API reads them", () => {
    expect(logStreamUrl(id, { level: ["warn", "error"], source: "app web", q: "50% & more" }, { tail: 200 })).toBe(
      `/api/v1/devices/${id}/logs/stream?tail=200&level=warn&level=error&source=app+web&q=50%25+%26+more`,
    );
  });

  it("resumes after the last line received instead of replaying the tail", () => {
    expect(logStreamUrl(id, {}, { after: "123456789012" })).toBe(`/api/v1/devices/${id}/logs/stream?after=123456789012`);
  });
});
