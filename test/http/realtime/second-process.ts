// A second service instance on the harness's PostgreSQL database: its own pool, pub/sub,
// event bus and HTTP server, as a second process behind a load balancer would have. Only
// meaningful on PostgreSQL (PGlite is one process by design).
import type { Server } from "node:http";
import { Writable } from "node:stream";
import type { Harness } from "../../support/harness.js";
import { openPostgres } from "../../../src/db/adapters.js";
import { createPrisma, type Database } from "../../../src/db/client.js";
import { createLogger } from "../../../src/lib/logger.js";
import { createServices, type Services } from "../../../src/services.js";
import { createApp } from "../../../src/app.js";
import { attachUpgradeHandlers } from "../../../src/modules/realtime/upgrade.js";
import { attachRemoteSessions } from "../../../src/modules/remote-sessions/upgrade.js";
import { pubSubOf } from "../../../src/modules/realtime/pubsub.js";

export const onPostgres = (h: Harness) => h.services.database.opened.raw.kind === "postgres";

export interface SecondProcess {
  url: string;
  services: Services;
  close(): Promise<void>;
}

export async function startSecondProcess(h: Harness): Promise<SecondProcess> {
  const connectionString = (h.services.database.opened.pool!.options as { connectionString: string }).connectionString;
  const opened = openPostgres(connectionString, 3);
  const prisma = createPrisma(opened);
  const database: Database = { prisma, opened, close: async () => { await prisma.$disconnect(); await opened.raw.close(); } };
  const sink = new Writable({ write: (_c, _e, cb) => cb() });
  const services = createServices(h.services.config, database, createLogger("info", sink));
  // The same keys as the first "process", as a real deployment must configure them.
  (services as { secrets: Services["secrets"] }).secrets = h.services.secrets;
  (services as { jwtKey: Uint8Array }).jwtKey = h.services.jwtKey;
  const server = await new Promise<Server>((resolve) => {
    const s = createApp(services).listen(0, "127.0.0.1", () => resolve(s));
  });
  const realtime = attachUpgradeHandlers(server, services);
  const remote = await attachRemoteSessions(server, services);
  await pubSubOf(services).start();
  await pubSubOf(h.services).start();
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    services,
    close: async () => {
      await remote.close();
      await realtime.close();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
      await database.close();
    },
  };
}
