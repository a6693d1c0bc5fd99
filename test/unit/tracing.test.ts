// The tracing module's pure parts (src/lib/tracing): which standard variables turn traces on,
// how a wrong value is refused (naming the variable), and what of an SQL statement is recorded.
// The service with a receiver: test/http/tracing/traces.test.ts.
import { describe, expect, it } from "vitest";
import { TracingConfigError, tracingSettingsOf } from "../../src/lib/tracing/settings.js";
import { sqlWithoutLiterals, tracingOn } from "../../src/lib/tracing/index.js";

describe("tracingSettingsOf", () => {
  it("is off without an OTLP endpoint, with OTEL_SDK_DISABLED=true, or with OTEL_TRACES_EXPORTER=none", () => {
    expect(tracingSettingsOf({})).toBeNull();
    expect(tracingSettingsOf({ OTEL_SERVICE_NAME: "x", OTEL_TRACES_SAMPLER: "always_on" })).toBeNull();
    expect(tracingSettingsOf({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318", OTEL_SDK_DISABLED: "true" })).toBeNull();
    expect(tracingSettingsOf({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://127.0.0.1:4318/v1/traces", OTEL_TRACES_EXPORTER: "none" })).toBeNull();
    // Nothing was loaded by asking.
    expect(tracingOn()).toBe(false);
  });

  it("sends to ENDPOINT/v1/traces, or to the traces endpoint as given, sampling parentbased_always_on by default", () => {
    expect(tracingSettingsOf({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" })).toMatchObject({
      endpoint: new URL("http://collector:4318/v1/traces"), sampler: { root: "always_on", parentBased: true, ratio: 1 },
    });
    expect(tracingSettingsOf({ OTEL_EXPORTER_OTLP_ENDPOINT: "https://otel.example/prefix/" })?.endpoint.href).toBe("https://otel.example/prefix/v1/traces");
    expect(tracingSettingsOf({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://a:4318", OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://b:4318/custom" })?.endpoint.href).toBe("http://b:4318/custom");
    expect(tracingSettingsOf({
      OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_TRACES_SAMPLER: "parentbased_traceidratio", OTEL_TRACES_SAMPLER_ARG: "0.1", OTEL_BSP_SCHEDULE_DELAY: "500",
    })).toMatchObject({ sampler: { root: "traceidratio", parentBased: true, ratio: 0.1 }, batch: { scheduledDelayMillis: 500 } });
  });

  it("refuses what it cannot do, naming the variable", () => {
    const endpoint = { OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318" };
    const cases: Array<[Record<string, string>, string]> = [
      [{ ...endpoint, OTEL_TRACES_SAMPLER: "jaeger_remote" }, "OTEL_TRACES_SAMPLER"],
      [{ ...endpoint, OTEL_TRACES_SAMPLER: "traceidratio", OTEL_TRACES_SAMPLER_ARG: "1.5" }, "OTEL_TRACES_SAMPLER_ARG"],
      [{ ...endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" }, "OTEL_EXPORTER_OTLP_PROTOCOL"],
      [{ ...endpoint, OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: "http/json" }, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"],
      [{ ...endpoint, OTEL_TRACES_EXPORTER: "zipkin" }, "OTEL_TRACES_EXPORTER"],
      [{ OTEL_EXPORTER_OTLP_ENDPOINT: "collector:4318" }, "OTEL_EXPORTER_OTLP_ENDPOINT"],
      [{ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "ftp://c/v1/traces" }, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"],
      [{ ...endpoint, OTEL_BSP_SCHEDULE_DELAY: "soon" }, "OTEL_BSP_SCHEDULE_DELAY"],
    ];
    for (const [env, name] of cases) {
      expect(() => tracingSettingsOf(env), name).toThrow(TracingConfigError);
      expect(() => tracingSettingsOf(env), name).toThrow(name);
    }
  });
});

describe("sqlWithoutLiterals", () => {
  it("keeps the statement's shape and placeholders, never a literal", () => {
    expect(sqlWithoutLiterals(`SELECT "id" FROM "User" WHERE "email" = 'a@b.c' AND "n" > 42 AND "x" = $1`))
      .toBe(`SELECT "id" FROM "User" WHERE "email" = ? AND "n" > ? AND "x" = $1`);
    expect(sqlWithoutLiterals(`UPDATE t SET s = 'it''s secret', e = E'esc\\'aped secret', d = $tag$dollar secret$tag$, f = $$plain secret$$, g = -1.5e3`))
      .toBe(`UPDATE t SET s = ?, e = ?, d = ?, f = ?, g = ?`);
    // A literal ending in e is not an E'' string's start; identifiers with digits stay.
    expect(sqlWithoutLiterals(`SELECT t1."c2" FROM t1 WHERE s = 'active'\n  AND z = 'UTC'`)).toBe(`SELECT t1."c2" FROM t1 WHERE s = ? AND z = ?`);
    expect(sqlWithoutLiterals("SELECT " + "x, ".repeat(2000) + "1").length).toBe(2000);
  });
});
