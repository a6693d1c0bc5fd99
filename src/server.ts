// Starting and stopping the whole service; used by main.ts and by tests that need a real
// listening server.
import type { Server } from "node:http";
import path from "node:path";
import type { Config } from "./config.js";
import { openDatabase } from "./db/client.js";
import { checkEncryptionKey } from "./db/key-check.js";
import { createLogger, type Logger } from "./lib/logger.js";
import { applyConnectionTimeouts } from "./lib/http-timeouts.js";
import { createServices, type Services } from "./services.js";
import { createApp } from "./app.js";
import { bootstrap, type BootstrapResult } from "./bootstrap.js";
import { createJobRunner } from "./jobs/index.js";
import { attachUpgradeHandlers } from "./modules/realtime/upgrade.js";
import { attachRemoteSessions } from "./modules/remote-sessions/upgrade.js";
import { serveProcessMetrics } from "./modules/metrics/serve.js";
import { flushTracing, instrumentDatabase, startTracing } from "./lib/tracing/index.js";

export interface RunningService {
  services: Services;
  server: Server;
  url: string;
  bootstrapResult: BootstrapResult;
  stop(): Promise<void>;
}

export async function startService(config: Config, logger: Logger = createLogger(config.LOG_LEVEL)): Promise<RunningService> {
  // OpenTelemetry traces when OTEL_EXPORTER_OTLP_ENDPOINT is set; nothing is loaded otherwise.
  await startTracing(logger);
  const database = await openDatabase(config, instrumentDatabase);
  const services = createServices(config, database, logger);
  // A database restored or moved without its ENCRYPTION_KEY stops here, saying so (docs/operations.md).
  const keySource = config.ENCRYPTION_KEY ? "ENCRYPTION_KEY" : `${path.resolve(config.DATA_DIR, "encryption.key")}, as ENCRYPTION_KEY is not set`;
  await checkEncryptionKey(database.opened.raw, services.secrets, keySource).catch(async (err: Error) => {
    await database.close().catch(() => undefined);
    throw err;
  });
  const bootstrapResult = await bootstrap(services);
  const app = createApp(services);
  const server = await new Promise<Server>((resolve, reject) => {
    const s = app.listen(config.PORT, config.HOST, () => resolve(s));
    s.once("error", reject);
  });
  applyConnectionTimeouts(server);
  // METRICS_PORT (loopback by default), or in a cluster worker the registry the primary collects.
  const metricsServer = await serveProcessMetrics(services).catch(async (err: Error) => {
    server.close();
    await database.close().catch(() => undefined);
    throw err;
  });
  const realtime = attachUpgradeHandlers(server, services); // WebSocket upgrade, cross-process pub/sub
  // remote access's stream legs and this process's internal relay port (docs/remote-access.md)
  const remote = await attachRemoteSessions(server, services).catch(async (err: Error) => {
    await realtime.close();
    server.close();
    metricsServer?.close();
    await database.close().catch(() => undefined);
    throw err;
  });
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : config.PORT;
  // Background jobs (scheduled registry syncs, ...): shared with other processes through the database.
  const jobs = config.JOBS_ENABLED ? createJobRunner(services) : null;
  jobs?.start();
  let stopping: Promise<void> | null = null;
  return {
    services,
    server,
    url: `http://127.0.0.1:${port}`,
    bootstrapResult,
    stop: () =>
      (stopping ??= (async () => {
        // Stop accepting and claiming, let in-flight requests and jobs finish (both bounded),
        // then close the database.
        const jobsStopped = jobs?.stop();
        metricsServer?.close();
        await remote.close(); // remote sessions relayed here end service-stopped, their legs close
        await realtime.close(); // WebSockets and log streams never end by themselves
        await new Promise<void>((resolve) => {
          const force = setTimeout(() => {
            server.closeAllConnections();
            resolve();
          }, 10_000);
          server.close(() => {
            clearTimeout(force);
            resolve();
          });
          server.closeIdleConnections();
        });
        await jobsStopped;
        await database.close();
        await flushTracing();
      })()),
  };
}
