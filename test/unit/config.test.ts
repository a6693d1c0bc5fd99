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

  it("takes the console's provider sign-in as a whole: client id and secret together, with an issuer", () => {
    const secret = "client-secret-that-must-not-be-echoed";
    const messageOf = (env: Record<string, string>) => {
      try {
        loadConfig(env);
      } catch (err) {
        return (err as Error).message;
      }
      return "";
    };
    expect(messageOf({ OIDC_ISSUER: "https://idp.example.test", OIDC_CLIENT_ID: "fleet" })).toMatch(/OIDC_CLIENT_SECRET: required with OIDC_CLIENT_ID/);
    const noId = messageOf({ OIDC_ISSUER: "https://idp.example.test", OIDC_CLIENT_SECRET: secret });
    expect(noId).toMatch(/OIDC_CLIENT_ID: required with OIDC_CLIENT_SECRET/);
    expect(noId).not.toContain(secret);
    expect(messageOf({ OIDC_CLIENT_ID: "fleet", OIDC_CLIENT_SECRET: secret })).toMatch(/OIDC_ISSUER: required with OIDC_CLIENT_ID/);
    expect(messageOf({ OIDC_SCOPES: "email profile" })).toMatch(/OIDC_SCOPES: must include openid/);
    expect(messageOf({ OIDC_CLIENT_AUTH_METHOD: "private_key_jwt" })).toMatch(/OIDC_CLIENT_AUTH_METHOD/);

    const config = loadConfig({ OIDC_ISSUER: "https://idp.example.test", OIDC_CLIENT_ID: "fleet", OIDC_CLIENT_SECRET: secret });
    expect(config).toMatchObject({ OIDC_CLIENT_AUTH_METHOD: "client_secret_basic", OIDC_SCOPES: "openid email profile" });
    expect(config.PUBLIC_URL).toBeUndefined();
  });

  it("takes PUBLIC_URL as an origin only", () => {
    expect(loadConfig({ PUBLIC_URL: "https://fleet.example.test/" }).PUBLIC_URL).toBe("https://fleet.example.test");
    expect(loadConfig({ PUBLIC_URL: "http://10.0.0.5:3000" }).PUBLIC_URL).toBe("http://10.0.0.5:3000");
    for (const bad of ["https://fleet.example.test/console", "ftp://fleet.example.test", "https://fleet.example.test/?x=1", "fleet.example.test"]) {
      expect(() => loadConfig({ PUBLIC_URL: bad }), bad).toThrow(/PUBLIC_URL/);
    }
  });
});
