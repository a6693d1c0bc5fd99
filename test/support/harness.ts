// A real service per test file: the express app listening on loopback, over its own
// database (a copy of the migrated one), with the bootstrap admin and key in place.
import fs from "node:fs";
import crypto from "node:crypto";
import os from "node:os";
import path from "node:path";
import { Writable } from "node:stream";
import type { Server } from "node:http";
import { inject } from "vitest";
import { loadConfig, type Config } from "../../src/config.js";
import { createPrisma, type Database } from "../../src/db/client.js";
import { openPGlite, openPostgres, type OpenedDatabase } from "../../src/db/adapters.js";
import { createLogger } from "../../src/lib/logger.js";
import { createServices, type Services } from "../../src/services.js";
import { createApp } from "../../src/app.js";
import { bootstrap } from "../../src/bootstrap.js";
import { attachUpgradeHandlers } from "../../src/modules/realtime/upgrade.js";
import { attachRemoteSessions } from "../../src/modules/remote-sessions/upgrade.js";
import { hashPassword, randomToken, sha256Hex } from "../../src/lib/crypto.js";
import { API_KEY_PREFIX } from "../../src/trpc/auth.js";
import { SecretWatch } from "./secret-watch.js";
import { restClient, type ApiResponse, type CallOptions } from "./rest-client.js";
import { applyConnectionTimeouts } from "../../src/lib/http-timeouts.js";
import { newPostgresDatabase } from "./postgres-database.js";
import { migratedDataDir } from "./server-process.js";

export { newPostgresDatabase };

// (defined in rest-client.ts, which the browser tests import without this module's service)
export { restClient, type ApiResponse, type CallOptions };

export const ADMIN_EMAIL = "admin@example.test";
export const ADMIN_PASSWORD = "admin-password-for-tests";
export const ADMIN_KEY = "fm_" + "T".repeat(40);
const TENANT_PASSWORD = "tenant-password-123";

export interface Tenant {
  org: { id: string; slug: string; name: string };
  user: { id: string; email: string; password: string };
  /** full-permission key of the tenant's owner */
  key: string;
}

export interface Harness {
  services: Services;
  url: string;
  /** every log line the service wrote, for leak checks */
  logs: string[];
  adminKey: string;
  defaultOrgId: string;
  api<T = any>(method: string, path: string, opts?: CallOptions): Promise<ApiResponse<T>>;
  /** a new organization with an owner user and a key holding `permissions` (default *) */
  createTenant(name?: string, permissions?: string[]): Promise<Tenant>;
  /** a key in an organization for a user with the given system role */
  createKey(organizationId: string, permissions: string[], opts?: { role?: string; userId?: string }): Promise<string>;
  login(email: string, password: string): Promise<string>;
  close(): Promise<void>;
}

export interface HarnessOptions {
  /** false: no secret leak checks at close (the fuzz test sends the same hostile strings in every field) */
  watchSecrets?: boolean;
  /** PostgreSQL only: where the service connects instead of the test database's own URL (a fault-injecting proxy) */
  rewriteDatabaseUrl?: (url: URL) => URL;
}

async function openTestDatabase(options: HarnessOptions = {}): Promise<{ opened: OpenedDatabase; drop: () => Promise<void> }> {
  const template = inject("postgresTemplate");
  const url = process.env.DATABASE_URL;
  if (url && template) {
    const { url: dbUrl, drop } = await newPostgresDatabase(url, template);
    const opened = openPostgres((options.rewriteDatabaseUrl?.(dbUrl) ?? dbUrl).toString(), 5);
    return { opened, drop };
  }
  // A copy of the migrated data directory (on tmpfs: vitest.config.ts), opened in place: 0.5 s
  // of CPU where restoring a dump into memory took 1.9 s (measured on this 2-core machine).
  const dir = migratedDataDir("fleet-db-");
  const opened = await openPGlite(dir);
  return { opened, drop: async () => fs.rmSync(dir, { recursive: true, force: true }) };
}

export async function createHarness(env: Record<string, string> = {}, options: HarnessOptions = {}): Promise<Harness> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "fleet-data-"));
  const config: Config = loadConfig({
    NODE_ENV: "test",
    DATA_DIR: dataDir,
    LOG_LEVEL: "info",
    BOOTSTRAP_ADMIN_EMAIL: ADMIN_EMAIL,
    BOOTSTRAP_ADMIN_PASSWORD: ADMIN_PASSWORD,
    BOOTSTRAP_API_KEY: ADMIN_KEY,
    ...env,
  });
  const { opened, drop } = await openTestDatabase(options);
  const prisma = createPrisma(opened);
  const database: Database = {
    prisma,
    opened,
    close: async () => {
      await prisma.$disconnect();
      await opened.raw.close();
    },
  };
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, cb) {
      logs.push(String(chunk));
      cb();
    },
  });
  // debug: every request's line too (npm start logs them at debug, src/http/request-log.ts), so
  // that the leak check (secret-watch) reads everything the service could ever write.
  const services = createServices(config, database, createLogger("debug", sink));
  await bootstrap(services);
  const app = createApp(services);
  const server = await new Promise<Server>((resolve) => {
    const s = app.listen(0, "127.0.0.1", () => resolve(s));
    applyConnectionTimeouts(s); // as the service sets them (a client never reuses a socket the server is closing)
  });
  const realtime = attachUpgradeHandlers(server, services);
  const remote = await attachRemoteSessions(server, services);
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  const defaultOrg = await prisma.organization.findUniqueOrThrow({ where: { slug: "default" } });

  const watch = new SecretWatch([ADMIN_KEY, ADMIN_PASSWORD, TENANT_PASSWORD]);
  const api: Harness["api"] = restClient(url, ADMIN_KEY, options.watchSecrets === false ? undefined : watch);

  const createKey: Harness["createKey"] = async (organizationId, permissions, opts = {}) => {
    let userId = opts.userId;
    if (!userId) {
      const role = await prisma.role.findFirstOrThrow({ where: { organizationId: null, name: opts.role ?? "owner" } });
      const user = await prisma.user.create({
        data: { email: `${crypto.randomUUID()}@example.test`, name: "Key Holder", passwordHash: null },
      });
      await prisma.membership.create({ data: { organizationId, userId: user.id, roleId: role.id } });
      userId = user.id;
    }
    const key = randomToken(API_KEY_PREFIX, 40);
    watch.add(key);
    await prisma.apiKey.create({
      data: { organizationId, name: "test key", keyPrefix: key.slice(0, 8), keyHash: sha256Hex(key), permissions, createdById: userId },
    });
    return key;
  };

  const createTenant: Harness["createTenant"] = async (name = `Tenant ${crypto.randomBytes(3).toString("hex")}`, permissions = ["*"]) => {
    const slug = name.toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-|-$/g, "");
    const org = await prisma.organization.create({ data: { name, slug } });
    const owner = await prisma.role.findFirstOrThrow({ where: { organizationId: null, name: "owner" } });
    const password = TENANT_PASSWORD;
    const user = await prisma.user.create({
      data: { email: `owner@${slug}.example.test`, name: `${name} Owner`, passwordHash: await hashPassword(password) },
    });
    await prisma.membership.create({ data: { organizationId: org.id, userId: user.id, roleId: owner.id } });
    const key = await createKey(org.id, permissions, { userId: user.id });
    return { org, user: { id: user.id, email: user.email, password }, key };
  };

  const login: Harness["login"] = async (email, password) => {
    const res = await api("POST", "/api/v1/auth/login", { key: null, body: { email, password } });
    if (res.status !== 200) throw new Error(`login failed: ${res.status} ${res.text}`);
    return res.body.accessToken as string;
  };

  return {
    services,
    url,
    logs,
    adminKey: ADMIN_KEY,
    defaultOrgId: defaultOrg.id,
    api,
    createTenant,
    createKey,
    login,
    close: async () => {
      await remote.close();
      await realtime.close();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
      await database.close();
      await drop();
      fs.rmSync(dataDir, { recursive: true, force: true });
      const leaks = options.watchSecrets === false ? [] : watch.check(logs);
      if (leaks.length > 0) throw new Error(`secrets leaked (test/support/secret-watch.ts):\n${leaks.slice(0, 20).join("\n")}`);
    },
  };
}
