// WORKERS=N: N processes serving one port (node:cluster), so that one machine's cores all
// serve requests. Each worker is the whole service, exactly as one of N processes behind a
// load balancer: they agree through PostgreSQL (jobs, events, sessions, tickets, rate limits;
// docs/scaling.md), which is why more than one worker needs PostgreSQL. This primary process
// serves nothing itself: it starts the workers, replaces one that dies, and on SIGTERM or
// SIGINT asks each to shut down gracefully, exiting once all have stopped.
import cluster from "node:cluster";
import type { Config } from "./config.js";
import type { Logger } from "./lib/logger.js";
import { onStopSignals } from "./lib/stop-signals.js";
import { serveClusterMetrics } from "./modules/metrics/serve.js";

/** What the primary sends a worker instead of a signal (src/main.ts listens for it). */
export const SHUTDOWN_MESSAGE = "fleet-manager:shutdown";

// A worker that dies is replaced after this long; one that keeps dying at start (database
// unreachable, say) is retried at this pace rather than in a tight loop.
const REPLACE_AFTER_MS = 1000;

export function superviseWorkers(config: Config, logger: Logger): void {
  let failedExits = 0;
  for (let i = 0; i < config.WORKERS; i++) cluster.fork();
  logger.info({ workers: config.WORKERS, pid: process.pid }, "starting workers");
  // METRICS_PORT: the primary answers all workers' metrics, summed (docs/observability.md).
  serveClusterMetrics(config, logger);

  cluster.on("exit", (worker, code, signal) => {
    if (signals.stopping) {
      if (code !== 0) failedExits++;
      if (Object.keys(cluster.workers ?? {}).length === 0) {
        logger.info({ failedExits }, "stopped");
        process.exit(failedExits > 0 ? 1 : 0);
      }
      return;
    }
    logger.error({ pid: worker.process.pid, code, signal }, "worker exited; starting another");
    setTimeout(() => {
      if (!signals.stopping) cluster.fork();
    }, REPLACE_AFTER_MS).unref();
  });

  const stop = (signal: string) => {
    logger.info({ signal }, "stopping workers");
    const workers = Object.values(cluster.workers ?? {});
    if (workers.length === 0) process.exit(0);
    // A message, not a signal: on Ctrl-C the terminal already sent each worker its SIGINT,
    // and a second signal would make it stop at once instead of gracefully.
    for (const worker of workers) if (worker?.isConnected()) worker.send(SHUTDOWN_MESSAGE);
  };
  const signals = onStopSignals(stop, () => process.exit(1));
}
