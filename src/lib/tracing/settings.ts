// What the standard OpenTelemetry variables ask for (docs/observability.md, "Traces"). Read
// without loading any OpenTelemetry module: when this answers null, none is ever loaded.
// The exporter itself reads OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT, _HEADERS, _TIMEOUT,
// _COMPRESSION and the certificate variables.

export type RootSampler = "always_on" | "always_off" | "traceidratio";

export interface TracingSettings {
  /** where the spans go (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, else OTEL_EXPORTER_OTLP_ENDPOINT + /v1/traces) */
  endpoint: URL;
  sampler: { root: RootSampler; ratio: number; parentBased: boolean };
  batch: { scheduledDelayMillis?: number; maxQueueSize?: number; maxExportBatchSize?: number; exportTimeoutMillis?: number };
}

export class TracingConfigError extends Error {
  override readonly name = "TracingConfigError";
}

const SAMPLERS: Record<string, { root: RootSampler; parentBased: boolean }> = {
  always_on: { root: "always_on", parentBased: false },
  always_off: { root: "always_off", parentBased: false },
  traceidratio: { root: "traceidratio", parentBased: false },
  parentbased_always_on: { root: "always_on", parentBased: true },
  parentbased_always_off: { root: "always_off", parentBased: true },
  parentbased_traceidratio: { root: "traceidratio", parentBased: true },
};

type Env = Record<string, string | undefined>;

const set = (env: Env, name: string) => {
  const value = env[name]?.trim();
  return value ? value : undefined;
};

function positiveInteger(env: Env, name: string): number | undefined {
  const text = set(env, name);
  if (text === undefined) return undefined;
  const value = Number(text);
  if (!Number.isInteger(value) || value <= 0) throw new TracingConfigError(`${name} must be a positive whole number (got "${text}")`);
  return value;
}

/** null: tracing is off (no endpoint, OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none). */
export function tracingSettingsOf(env: Env): TracingSettings | null {
  if (set(env, "OTEL_SDK_DISABLED")?.toLowerCase() === "true") return null;
  const exporter = set(env, "OTEL_TRACES_EXPORTER")?.toLowerCase();
  if (exporter === "none") return null;
  const specific = set(env, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
  const general = set(env, "OTEL_EXPORTER_OTLP_ENDPOINT");
  if (!specific && !general) return null;
  if (exporter !== undefined && exporter !== "otlp") {
    throw new TracingConfigError(`OTEL_TRACES_EXPORTER must be otlp or none (got "${exporter}")`);
  }
  const name = specific ? "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT" : "OTEL_EXPORTER_OTLP_ENDPOINT";
  let endpoint: URL;
  try {
    endpoint = specific ? new URL(specific) : new URL("v1/traces", general!.endsWith("/") ? general : `${general}/`);
  } catch {
    throw new TracingConfigError(`${name} must be an http:// or https:// URL`);
  }
  if (endpoint.protocol !== "http:" && endpoint.protocol !== "https:") throw new TracingConfigError(`${name} must be an http:// or https:// URL`);

  const protocolName = set(env, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") ? "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL" : "OTEL_EXPORTER_OTLP_PROTOCOL";
  const protocol = set(env, protocolName) ?? "http/protobuf";
  if (protocol !== "http/protobuf") {
    throw new TracingConfigError(`${protocolName}: only http/protobuf is supported (got "${protocol}"); an OpenTelemetry collector converts it to anything else`);
  }

  const samplerName = (set(env, "OTEL_TRACES_SAMPLER") ?? "parentbased_always_on").toLowerCase();
  const sampler = SAMPLERS[samplerName];
  if (!sampler) throw new TracingConfigError(`OTEL_TRACES_SAMPLER must be one of ${Object.keys(SAMPLERS).join(", ")} (got "${samplerName}")`);
  let ratio = 1;
  const arg = set(env, "OTEL_TRACES_SAMPLER_ARG");
  if (sampler.root === "traceidratio" && arg !== undefined) {
    ratio = Number(arg);
    if (!Number.isFinite(ratio) || ratio < 0 || ratio > 1) throw new TracingConfigError(`OTEL_TRACES_SAMPLER_ARG must be a number from 0 to 1 (got "${arg}")`);
  }

  return {
    endpoint,
    sampler: { ...sampler, ratio },
    batch: {
      scheduledDelayMillis: positiveInteger(env, "OTEL_BSP_SCHEDULE_DELAY"),
      maxQueueSize: positiveInteger(env, "OTEL_BSP_MAX_QUEUE_SIZE"),
      maxExportBatchSize: positiveInteger(env, "OTEL_BSP_MAX_EXPORT_BATCH_SIZE"),
      exportTimeoutMillis: positiveInteger(env, "OTEL_BSP_EXPORT_TIMEOUT"),
    },
  };
}
