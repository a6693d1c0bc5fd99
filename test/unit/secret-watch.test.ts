// The leak check every harness runs at close (test/support/secret-watch.ts) finds what it is
// there to find, and does not take names, ids and prefixes for secrets.
import { describe, expect, it } from "vitest";
import { SecretWatch } from "../support/secret-watch.js";

const json = (value: unknown) => ({ text: JSON.stringify(value), parsed: value });

describe("SecretWatch", () => {
  it("reports a password, credential or signing secret a request sent that a response shows back", () => {
    const watch = new SecretWatch([]);
    watch.sent("POST /registries", { name: "registry-one-two", credential: { username: "robot-account-1", password: "registry-password-1" } }, {});
    watch.sent("POST /alert-targets", { config: { signingSecret: "webhook-signing-secret" } }, {});
    const fine = json({ name: "registry-one-two", credential: { username: "robot-account-1" }, hasCredential: true });
    watch.answered("POST /registries -> 201", fine.text, new Headers(), fine.parsed);
    expect(watch.check([])).toEqual([]);

    const leak = json({ config: { signingSecret: "webhook-signing-secret" } });
    watch.answered("GET /alert-targets/1 -> 200", leak.text, new Headers(), leak.parsed);
    const header = new Headers({ "x-debug": "registry-password-1" });
    watch.answered("GET /registries/1 -> 200", "{}", header, {});
    const found = watch.check([]);
    expect(found).toHaveLength(2);
    expect(found[0]).toContain("GET /alert-targets/1 -> 200");
    expect(found[1]).toContain("GET /registries/1 -> 200");
    expect(found.join("\n")).not.toContain("webhook-signing-secret"); // the report names, never repeats, a secret
  });

  it("reports any secret seen (sent, answered, made by the test, the API key and bearer token used) in a log line", () => {
    const watch = new SecretWatch(["bootstrap-admin-password"]);
    watch.add("fm_inserted-by-the-test-0001");
    watch.sent("GET /x", undefined, { "x-api-key": "fm_sent-in-the-header-0002", authorization: "Bearer eyJsession.token.0003" });
    const created = json({ id: "7c0e0a4e-1d7b-4a57-9d1e-5f3f7b2b1c11", token: "fmet_enrollment-token-0004", tokenPrefix: "fmet_enr" });
    watch.answered("POST /enrollment-tokens -> 201", created.text, new Headers(), created.parsed);
    expect(watch.check(['{"msg":"request","id":"7c0e0a4e-1d7b-4a57-9d1e-5f3f7b2b1c11","prefix":"fmet_enr"}'])).toEqual([]);

    for (const secret of ["bootstrap-admin-password", "fm_inserted-by-the-test-0001", "fm_sent-in-the-header-0002", "eyJsession.token.0003", "fmet_enrollment-token-0004"]) {
      const found = watch.check([`{"msg":"oops","value":"${secret}"}`]);
      expect(found, secret).toHaveLength(1);
      expect(found[0]).toContain("log line 1");
      expect(found[0]).not.toContain(secret);
    }
  });
});
