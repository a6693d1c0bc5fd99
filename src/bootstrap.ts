// First start on an empty database: the system roles, organization `default`, a Super Admin
// and a full-permission platform API key. Guarded by the existence of any user, so it never
// runs twice.
import crypto from "node:crypto";
import type { Services } from "./services.js";
import { hashPassword, randomToken, sha256Hex } from "./lib/crypto.js";
import { API_KEY_PREFIX } from "./trpc/auth.js";
import { PLATFORM_ADMIN, SYSTEM_ROLES, WILDCARD } from "./trpc/permissions.js";
import { writeAudit } from "./trpc/audit.js";

export interface BootstrapResult {
  created: boolean;
  adminEmail?: string;
  adminUserId?: string;
  /** only when generated here: printed once, never stored in clear */
  generatedPassword?: string;
  generatedApiKey?: string;
}

/** System roles are kept in step with the catalogue in code at every start. */
export async function syncSystemRoles(services: Services) {
  for (const role of SYSTEM_ROLES) {
    const existing = await services.prisma.role.findFirst({ where: { organizationId: null, name: role.name } });
    if (existing) {
      await services.prisma.role.update({ where: { id: existing.id }, data: { permissions: role.permissions, description: role.description, system: true } });
    } else {
      await services.prisma.role.create({ data: { ...role, organizationId: null, system: true } });
    }
  }
}

export async function bootstrap(services: Services): Promise<BootstrapResult> {
  await syncSystemRoles(services);
  const { config } = services;
  const generatedPassword = config.BOOTSTRAP_ADMIN_PASSWORD ? undefined : crypto.randomBytes(12).toString("base64url");
  const password = config.BOOTSTRAP_ADMIN_PASSWORD ?? generatedPassword!;
  const apiKey = config.BOOTSTRAP_API_KEY ?? randomToken(API_KEY_PREFIX, 40);
  const passwordHash = await hashPassword(password);

  return services.prisma.$transaction(async (tx) => {
    // Serialize concurrent first starts of several processes on one PostgreSQL.
    await tx.$executeRawUnsafe("SELECT pg_advisory_xact_lock(7391002)");
    if ((await tx.user.count()) > 0) return { created: false };
    const owner = await tx.role.findFirstOrThrow({ where: { organizationId: null, name: "owner" } });
    const org = await tx.organization.create({ data: { name: "Default", slug: "default", description: "Created at first start" } });
    const admin = await tx.user.create({
      data: {
        email: config.BOOTSTRAP_ADMIN_EMAIL.toLowerCase(),
        name: "Administrator",
        passwordHash,
        isSuperAdmin: true,
        emailVerifiedAt: new Date(),
      },
    });
    await tx.membership.create({ data: { organizationId: org.id, userId: admin.id, roleId: owner.id } });
    const key = await tx.apiKey.create({
      data: {
        organizationId: org.id,
        name: "bootstrap",
        description: "Full-permission platform key created at first start",
        keyPrefix: apiKey.slice(0, 8),
        keyHash: sha256Hex(apiKey),
        // `*` is every permission of `default`; Super Admin power must be named as well.
        permissions: [WILDCARD, PLATFORM_ADMIN],
        createdById: admin.id,
      },
    });
    await writeAudit(tx, null, null, { action: "system.bootstrap", outcome: "success", organizationId: org.id, entityType: "organization", entityId: org.id, message: `created admin ${admin.email} and platform API key ${key.keyPrefix}… (${PLATFORM_ADMIN})` });
    return {
      created: true,
      adminEmail: admin.email,
      adminUserId: admin.id,
      generatedPassword,
      generatedApiKey: config.BOOTSTRAP_API_KEY ? undefined : apiKey,
    };
  });
}
