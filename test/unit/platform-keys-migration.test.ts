// The migration that names platform:admin on the keys that were platform keys by their `*`
// (prisma/migrations/*_platform_keys_named), run on a database built by the migrations
// before it and filled the way earlier versions left it: the bootstrap key holding only `*`,
// Super Admins' `*` keys in their home organization and in others, `platform:*` entries.
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Writable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.js";
import { createPrisma, type Database } from "../../src/db/client.js";
import { openPGlite, openPostgres, type OpenedDatabase } from "../../src/db/adapters.js";
import { applyMigrations, readMigrations } from "../../src/db/migrate.js";
import { createLogger } from "../../src/lib/logger.js";
import { createServices, type Services } from "../../src/services.js";
import { bootstrap } from "../../src/bootstrap.js";
import { authenticate, API_KEY_PREFIX } from "../../src/trpc/auth.js";
import { randomToken, sha256Hex } from "../../src/lib/crypto.js";
import { ADMIN_EMAIL, ADMIN_KEY, ADMIN_PASSWORD, newPostgresDatabase } from "../support/harness.js";

const MIGRATION = readMigrations().find((m) => m.name.endsWith("_platform_keys_named"))!.name;

let opened: OpenedDatabase;
let drop: () => Promise<void> = async () => undefined;
let services: Services;
let dataDir: string;
let earlier: Date;

/** raw keys by name, and their rows' ids */
const keys = new Map<string, { key: string; id: string }>();

async function openEmptyDatabase(): Promise<OpenedDatabase> {
  const url = process.env.DATABASE_URL;
  if (!url) return openPGlite();
  const created = await newPostgresDatabase(url);
  drop = created.drop;
  return openPostgres(created.url.toString(), 2);
}

/** Organizations and memberships are given increasing creation times: "oldest" decides homes. */
const at = (seconds: number) => new Date(earlier.getTime() + seconds * 1000);

async function key(name: string, organizationId: string, createdById: string, permissions: string[], revoked = false) {
  const raw = randomToken(API_KEY_PREFIX, 40);
  const row = await services.prisma.apiKey.create({
    data: { organizationId, name, keyPrefix: raw.slice(0, 8), keyHash: sha256Hex(raw), permissions, createdById, revokedAt: revoked ? new Date() : null },
  });
  keys.set(name, { key: raw, id: row.id });
}

const permissionsOf = async (name: string) =>
  (await services.prisma.apiKey.findUniqueOrThrow({ where: { id: keys.get(name)!.id } })).permissions;

beforeAll(async () => {
  opened = await openEmptyDatabase();
  // Every migration but the one under test: the schema today's Prisma client reads and writes
  // (later migrations add columns, such as ApiKey.replacedById), with the data of before it.
  const before = readMigrations().filter((m) => m.name !== MIGRATION);
  await applyMigrations(opened.raw, before);
  const prisma = createPrisma(opened);
  const database: Database = { prisma, opened, close: async () => { await prisma.$disconnect(); await opened.raw.close(); } };
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "fleet-migration-test-"));
  const config = loadConfig({
    NODE_ENV: "test", DATA_DIR: dataDir, LOG_LEVEL: "error",
    BOOTSTRAP_ADMIN_EMAIL: ADMIN_EMAIL, BOOTSTRAP_ADMIN_PASSWORD: ADMIN_PASSWORD, BOOTSTRAP_API_KEY: ADMIN_KEY,
  });
  services = createServices(config, database, createLogger("error", new Writable({ write: (_c, _e, cb) => cb() })));
  await bootstrap(services);
  // What the bootstrap of earlier versions wrote: a key holding `*` only.
  const bootstrapKey = await prisma.apiKey.update({ where: { keyHash: sha256Hex(ADMIN_KEY) }, data: { permissions: ["*"] } });
  keys.set("bootstrap", { key: ADMIN_KEY, id: bootstrapKey.id });

  const defaultOrg = await prisma.organization.findUniqueOrThrow({ where: { slug: "default" } });
  earlier = defaultOrg.createdAt;
  const owner = await prisma.role.findFirstOrThrow({ where: { organizationId: null, name: "owner" } });
  const org = (slug: string, seconds: number) => prisma.organization.create({ data: { name: slug, slug, createdAt: at(seconds) } });
  const user = (email: string, isSuperAdmin: boolean) => prisma.user.create({ data: { email, name: email, isSuperAdmin } });
  const member = (organizationId: string, userId: string, seconds: number) =>
    prisma.membership.create({ data: { organizationId, userId, roleId: owner.id, createdAt: at(seconds) } });

  const tenant = await org("tenant", 10);
  const other = await org("other", 20);
  const boot = await prisma.user.findUniqueOrThrow({ where: { email: ADMIN_EMAIL } });
  await member(other.id, boot.id, 30); // a later membership: not the bootstrap admin's home
  const nomad = await user("nomad@example.test", true); // a Super Admin who is a member of nothing
  const late = await user("late@example.test", true); // a Super Admin at home in `other`
  await member(other.id, late.id, 40);
  await member(defaultOrg.id, late.id, 50);
  const tenantOwner = await user("owner@example.test", false);
  await member(tenant.id, tenantOwner.id, 60);
  const demoted = await user("demoted@example.test", false); // was a Super Admin once
  await member(defaultOrg.id, demoted.id, 70);

  await key("boot in tenant (CI)", tenant.id, boot.id, ["*"]);
  await key("boot in other (member, not home)", other.id, boot.id, ["*"]);
  await key("boot revoked at home", defaultOrg.id, boot.id, ["*"], true);
  await key("boot devices:* at home", defaultOrg.id, boot.id, ["devices:*"]);
  await key("boot already named", defaultOrg.id, boot.id, ["*", "platform:admin"]);
  await key("boot platform:* in tenant", tenant.id, boot.id, ["devices:read", "platform:*"]);
  await key("nomad in the oldest organization", defaultOrg.id, nomad.id, ["*"]);
  await key("nomad in tenant", tenant.id, nomad.id, ["*"]);
  await key("late at home", other.id, late.id, ["*"]);
  await key("late in default (member, not home)", defaultOrg.id, late.id, ["*"]);
  await key("tenant owner", tenant.id, tenantOwner.id, ["*"]);
  await key("demoted at home", defaultOrg.id, demoted.id, ["*"]);
  await prisma.role.create({ data: { organizationId: tenant.id, name: "platform ops", permissions: ["platform:*", "devices:read"] } });

  // The later migrations of the history follow it; this one is applied first.
  expect((await applyMigrations(opened.raw))[0]).toBe(MIGRATION);
}, 120_000);

afterAll(async () => {
  await services?.database.close();
  await drop();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

describe(`migration ${MIGRATION}`, () => {
  it("names platform:admin on the * keys of Super Admins in their home organization, the bootstrap key among them", async () => {
    expect(await permissionsOf("bootstrap")).toEqual(["*", "platform:admin"]);
    expect(await permissionsOf("nomad in the oldest organization")).toEqual(["*", "platform:admin"]);
    expect(await permissionsOf("late at home")).toEqual(["*", "platform:admin"]);
  });

  it("leaves every other key as it was", async () => {
    for (const name of [
      "boot in tenant (CI)", "boot in other (member, not home)", "boot revoked at home", "nomad in tenant",
      "late in default (member, not home)", "tenant owner", "demoted at home",
    ]) expect(await permissionsOf(name), name).toEqual(["*"]);
    expect(await permissionsOf("boot devices:* at home")).toEqual(["devices:*"]);
    expect(await permissionsOf("boot already named")).toEqual(["*", "platform:admin"]);
  });

  it("turns platform:* (an explicit request for platform power) into platform:admin, in keys and roles", async () => {
    expect(await permissionsOf("boot platform:* in tenant")).toEqual(["devices:read", "platform:admin"]);
    const role = await services.prisma.role.findFirstOrThrow({ where: { name: "platform ops" } });
    expect(role.permissions).toEqual(["devices:read", "platform:admin"]);
  });

  it("records one system audit entry per key it marked, in the key's organization", async () => {
    const entries = await services.prisma.auditEntry.findMany({ where: { action: "apiKeys.platformNamed" } });
    const marked = ["bootstrap", "nomad in the oldest organization", "late at home"].map((n) => keys.get(n)!.id);
    expect(entries.map((e) => e.entityId).sort()).toEqual([...marked].sort());
    for (const entry of entries) {
      const row = await services.prisma.apiKey.findUniqueOrThrow({ where: { id: entry.entityId! } });
      expect(entry).toMatchObject({ actorType: "system", entityType: "api_key", outcome: "success", organizationId: row.organizationId });
      expect(entry.message).toContain(row.keyPrefix);
    }
  });

  it("keeps the bootstrap key a platform key and the CI key inside its organization, as authentication sees them", async () => {
    const asKey = (name: string) => authenticate(services, { "x-api-key": keys.get(name)!.key });
    expect((await asKey("bootstrap")).isSuperAdmin).toBe(true);
    expect((await asKey("late at home")).isSuperAdmin).toBe(true);
    expect((await asKey("boot in tenant (CI)")).isSuperAdmin).toBe(false);
    expect((await asKey("boot in other (member, not home)")).isSuperAdmin).toBe(false);
  });
});
