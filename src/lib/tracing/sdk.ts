// The OpenTelemetry SDK, loaded only when tracing is on (src/lib/tracing/index.ts imports
// this file with import()). Every @opentelemetry package is itself imported with import() here:
// the service's bundle (scripts/build-service.mjs) inlines this file, and a static import of an
// external package would become an import of the whole bundle, loaded at every start.
import type { Attributes, Context, Span, Tracer } from "@opentelemetry/api";
import type { TracingSettings } from "./settings.js";

export type SpanKindName = "server" | "client" | "internal";

export interface TracingSdk {
  tracer: Tracer;
  api: typeof import("@opentelemetry/api");
  /** a span of `kind`, child of the active one (or of `parent`); not made when `requireParent` and none is active */
  startSpan(name: string, kind: SpanKindName, attributes: Attributes, options?: { parent?: Context; requireParent?: boolean }): Span | undefined;
  /** the incoming W3C trace context of a request's headers */
  extract(headers: Record<string, unknown>): Context;
  /** writes traceparent (and tracestate) of the active span into `headers` */
  inject(headers: Record<string, string>): void;
  flush(): Promise<void>;
  shutdown(): Promise<void>;
}

export async function loadTracingSdk(settings: TracingSettings, serviceVersion?: string): Promise<TracingSdk> {
  const [api, core, contextHooks, sdkTrace, resources, exporterModule] = await Promise.all([
    import("@opentelemetry/api"),
    import("@opentelemetry/core"),
    import("@opentelemetry/context-async-hooks"),
    import("@opentelemetry/sdk-trace"),
    import("@opentelemetry/resources"),
    import("@opentelemetry/exporter-trace-otlp-proto"),
  ]);
  const { AlwaysOffSampler, AlwaysOnSampler, BatchSpanProcessor, ParentBasedSampler, TraceIdRatioBasedSampler, TracerProvider } = sdkTrace;

  const root = (() => {
    switch (settings.sampler.root) {
      case "always_on": return new AlwaysOnSampler();
      case "always_off": return new AlwaysOffSampler();
      case "traceidratio": return new TraceIdRatioBasedSampler(settings.sampler.ratio);
    }
  })();
  const sampler = settings.sampler.parentBased ? new ParentBasedSampler({ root }) : root;

  // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES (envDetector) win over the defaults.
  const resource = resources
    .resourceFromAttributes({ "service.name": "fleet-manager", ...(serviceVersion ? { "service.version": serviceVersion } : {}) })
    .merge(resources.detectResources({ detectors: [resources.envDetector] }));

  // The exporter reads OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT, _HEADERS, _TIMEOUT, _COMPRESSION and
  // the certificate variables itself.
  const exporter = new exporterModule.OTLPTraceExporter();
  const processor = new BatchSpanProcessor({ exporter, ...settings.batch });
  const provider = new TracerProvider({ resource, sampler, spanProcessors: [processor] });

  const contextManager = new contextHooks.AsyncLocalStorageContextManager().enable();
  api.context.setGlobalContextManager(contextManager);
  const propagator = new core.W3CTraceContextPropagator();
  api.propagation.setGlobalPropagator(propagator);
  api.trace.setGlobalTracerProvider(provider);
  const tracer = provider.getTracer("fleet-manager", serviceVersion);

  const kinds = { server: api.SpanKind.SERVER, client: api.SpanKind.CLIENT, internal: api.SpanKind.INTERNAL };

  return {
    tracer,
    api,
    startSpan(name, kind, attributes, options = {}) {
      const parent = options.parent ?? api.context.active();
      if (options.requireParent && !api.trace.getSpan(parent)) return undefined;
      return tracer.startSpan(name, { kind: kinds[kind], attributes }, parent);
    },
    extract: (headers) => api.propagation.extract(api.ROOT_CONTEXT, headers),
    inject: (headers) => api.propagation.inject(api.context.active(), headers),
    flush: () => provider.forceFlush(),
    shutdown: async () => {
      await provider.shutdown();
      contextManager.disable();
    },
  };
}
