// The kept first-start block (src/first-start.ts) and the level of request log lines
// (src/http/request-log.ts).
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { firstStartPath, forgetFirstStart, keepFirstStart } from "../../src/first-start.js";
import { requestLogLevel } from "../../src/http/request-log.js";

describe("the kept first-start block", () => {
  it("is written with mode 0600 (also over an existing file) and forgotten only for its own admin", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "first-start-"));
    try {
      fs.writeFileSync(firstStartPath(dir), "old", { mode: 0o644 });
      const file = keepFirstStart(dir, "First start: ...\n  password:      pw-123", "admin-1");
      expect(fs.statSync(file).mode & 0o777).toBe(0o600);
      expect(fs.readFileSync(file, "utf8")).toContain("password:      pw-123");
      expect(forgetFirstStart(dir, "someone-else")).toBe(false);
      expect(fs.existsSync(file)).toBe(true);
      expect(forgetFirstStart(dir, "admin-1")).toBe(true);
      expect(fs.existsSync(file)).toBe(false);
      expect(forgetFirstStart(dir, "admin-1")).toBe(false); // nothing left: no error
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("request log level", () => {
  it("ordinary requests at debug; server errors and slow requests at warn; event streams never slow", () => {
    expect(requestLogLevel(200, 12, "application/json", 1000)).toBe("debug");
    expect(requestLogLevel(404, 3, "application/json", 1000)).toBe("debug");
    expect(requestLogLevel(503, 3, "application/json", 1000)).toBe("warn");
    expect(requestLogLevel(200, 1500, "application/json", 1000)).toBe("warn");
    expect(requestLogLevel(200, 1500, "application/json", 0)).toBe("debug");
    expect(requestLogLevel(200, 60_000, "text/event-stream; charset=utf-8", 1000)).toBe("debug");
  });
});
