// The kept first-start block (src/first-start.ts) and the level of request log lines
// (src/http/request-log.ts).
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { firstStartBlock, firstStartPath, forgetFirstStart, keepFirstStart } from "../../src/first-start.js";
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

describe("the printed first-start block without a terminal", () => {
  it("leaves out the generated password and API key, keeps everything else and a chosen secret's line", () => {
    const facts = { where: "http://localhost:3000", adminEmail: "admin@example.com", generatedPassword: "Xy7-generated-Pw", generatedApiKey: "fm_0123456789abcdefABCDEF0123456789abcdef" };
    const block = firstStartBlock(facts, true);
    expect(block).toEqual([
      "First start: created organization 'default' and its Super Admin.",
      "  web console:   http://localhost:3000/   (sign in with the e-mail and password below)",
      "  admin e-mail:  admin@example.com",
      "  password:      Xy7-generated-Pw   (generated; set BOOTSTRAP_ADMIN_PASSWORD to choose it)",
      "  API key:       fm_0123456789abcdefABCDEF0123456789abcdef   (generated; set BOOTSTRAP_API_KEY to choose it)",
      "  API docs:      http://localhost:3000/api/v1/docs",
    ]);
    const printed = firstStartBlock(facts, false).join("\n");
    expect(printed).not.toContain("Xy7-generated-Pw");
    expect(printed).not.toContain("fm_0123456789abcdef");
    expect(firstStartBlock(facts, false)).toEqual([
      block[0], block[1], block[2],
      "  password:      (generated; in the file below, not printed without a terminal; set BOOTSTRAP_ADMIN_PASSWORD to choose it)",
      "  API key:       (generated; in the file below, not printed without a terminal; set BOOTSTRAP_API_KEY to choose it)",
      block[5],
    ]);
    expect(firstStartBlock({ ...facts, generatedPassword: undefined }, false)[3]).toBe("  password:      from BOOTSTRAP_ADMIN_PASSWORD");
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
