// Where /metrics is served besides PORT (docs/observability.md): METRICS_PORT on METRICS_HOST
// (loopback by default), without a token. One process: its own registry. WORKERS > 1: the
// primary listens and asks every worker for its registry (prom-client's AggregatorRegistry,
// over the cluster's IPC channel): counters and histograms summed, gauges summed unless they
// say otherwise (fleet_deployments: one worker's value); each worker only answers the primary.
import cluster from "node:cluster";
import type http from "node:http";
import { AggregatorRegistry } from "prom-client";
import type { Config } from "../../config.js";
import type { Logger } from "../../lib/logger.js";
import type { Services } from "../../services.js";
import { listenMetricsPort } from "./http.js";
import { metricsOf } from "./registry.js";

/** In a single process: METRICS_PORT; in a worker: the registry its primary collects. */
export async function serveProcessMetrics(services: Services): Promise<http.Server | null> {
  const metrics = metricsOf(services);
  if (!metrics) return null;
  if (cluster.isWorker) {
    // prom-client answers the primary's requests only once an AggregatorRegistry was made in
    // the worker too (its constructor adds the IPC listener); then it sends this registry.
    new AggregatorRegistry();
    AggregatorRegistry.setRegistries([metrics.registry]);
    return null;
  }
  const { METRICS_HOST, METRICS_PORT } = services.config;
  if (!METRICS_PORT) return null;
  const server = await listenMetricsPort(METRICS_HOST, METRICS_PORT, async () => ({
    contentType: metrics.registry.contentType, text: await metrics.registry.metrics(),
  }), (err) => services.logger.error({ err: err.message }, "metrics collection failed"));
  services.logger.info({ host: METRICS_HOST, port: METRICS_PORT }, "metrics served on the metrics port");
  return server;
}

/** In the cluster's primary: METRICS_PORT answers all workers' metrics. */
export function serveClusterMetrics(config: Config, logger: Logger): void {
  if (!config.METRICS_PORT) return;
  const aggregator = new AggregatorRegistry();
  listenMetricsPort(config.METRICS_HOST, config.METRICS_PORT, async () => ({
    contentType: aggregator.contentType, text: await aggregator.clusterMetrics(),
  }), (err) => logger.error({ err: err.message }, "metrics collection from the workers failed")).then(
    () => logger.info({ host: config.METRICS_HOST, port: config.METRICS_PORT }, "metrics of all workers served on the metrics port"),
    (err: Error) => logger.error({ err: err.message, port: config.METRICS_PORT }, "the metrics port could not be opened"),
  );
}
