// The configuration is checked as a whole at start: a bad value stops the process with a
// message naming the variable (src/main.ts prints it and exits with 2).
import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../src/config.js";

describe("configuration", () => {
  it("takes one worker and the default request budgets when nothing is set", () => {
    const config = loadConfig({});
    expect(config).toMatchObject({ WORKERS: 1, RATE_LIMIT_PER_SOURCE: 6000, RATE_LIMIT_PER_CREDENTIAL: 3000, RATE_LIMIT_PER_DEVICE: 600 });
  });

  it("refuses more than one worker on the embedded database, naming WORKERS", () => {
    expect(() => loadConfig({ WORKERS: "2" })).toThrow(ConfigError);
    expect(() => loadConfig({ WORKERS: "2" })).toThrow(/WORKERS: more than one worker needs PostgreSQL/);
    expect(loadConfig({ WORKERS: "4", DATABASE_URL: "postgresql://fleet@127.0.0.1:5432/fleet" }).WORKERS).toBe(4);
  });

  it("names each bad value", () => {
    let error: unknown;
    try {
      loadConfig({ WORKERS: "0", RATE_LIMIT_PER_DEVICE: "lots" });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toMatch(/WORKERS/);
    expect((error as Error).message).toMatch(/RATE_LIMIT_PER_DEVICE/);
  });
});
