// Real server processes for the scale-out and fault tests: the service (its build) started as a child
// process (what `npm start` runs), on a database the test names, each on its own port.
// Also a small REST client per process and a WebSocket client for the realtime channel.
import { restClient, type Harness } from "../../support/harness.js";
import { eventually, spawnService, type ServerProcess, type ServerProcessOptions } from "../../support/server-process.js";

export type { ServerProcess };

/** Keys every process of one installation must share (docs/scaling.md). */
export const SHARED_KEYS = {
  ENCRYPTION_KEY: "ab".repeat(32),
  JWT_SECRET: "scale-out-tests-jwt-secret-0123456789abcdef",
};

/** The database URL of the harness (PostgreSQL only). */
export function databaseUrlOf(h: Harness): string {
  return (h.services.database.opened.pool!.options as { connectionString: string }).connectionString;
}

export { restClient };

/** A harness whose `api` talks to another process (for the helpers that take a Harness). */
export function viaProcess(h: Harness, p: ServerProcess): Harness {
  return { ...h, url: p.url, api: p.api };
}

/**
 * Starts the service with `env` (PORT 0: any free port) and resolves once it logged "ready";
 * the processes of one test share SHARED_KEYS. `defaultKey` is sent as X-API-Key by `api`
 * unless a call names another (or null). `database`: see spawnService (PGlite in a DATA_DIR of its own).
 */
export function startServerProcess(name: string, env: Record<string, string>, defaultKey: string | null = null, database: ServerProcessOptions["database"] = "fresh"): Promise<ServerProcess> {
  return spawnService(name, { NODE_ENV: "test", DATABASE_POOL_SIZE: "4", JOBS_POLL_INTERVAL_MS: "200", ...SHARED_KEYS, ...env }, { defaultKey, database });
}

export { eventually };

export { connectRealtime, type RealtimeClient } from "../../support/realtime-client.js";
