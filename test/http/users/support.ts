// Helpers for the organization and user tests: people in a given state, keys of a Super
// Admin without platform:admin, and reading what the outbox mailer stored.
import crypto from "node:crypto";
import { expect } from "vitest";
import { hashPassword } from "../../../src/lib/crypto.js";
import { ADMIN_EMAIL, type Harness } from "../../support/harness.js";

export const PASSWORD = "a-long-enough-password";

export interface PersonOptions {
  email?: string;
  name?: string;
  superAdmin?: boolean;
  status?: "active" | "disabled";
  /** organization + system role name to make them a member of */
  member?: { organizationId: string; role: string };
  withPassword?: boolean;
}

export async function createPerson(h: Harness, opts: PersonOptions = {}) {
  const email = opts.email ?? `person-${crypto.randomBytes(5).toString("hex")}@example.test`;
  const user = await h.services.prisma.user.create({
    data: {
      email,
      name: opts.name ?? "Test Person",
      passwordHash: opts.withPassword === false ? null : await hashPassword(PASSWORD),
      isSuperAdmin: opts.superAdmin ?? false,
      status: opts.status ?? "active",
    },
  });
  if (opts.member) {
    const role = await systemRole(h, opts.member.role);
    await h.services.prisma.membership.create({ data: { organizationId: opts.member.organizationId, userId: user.id, roleId: role.id } });
  }
  return user;
}

export const systemRole = (h: Harness, name: string) =>
  h.services.prisma.role.findFirstOrThrow({ where: { organizationId: null, name } });

export const adminUser = (h: Harness) => h.services.prisma.user.findUniqueOrThrow({ where: { email: ADMIN_EMAIL } });

/** A key of the bootstrap Super Admin holding everything except platform:admin. */
export async function superAdminKeyWithoutPlatform(h: Harness) {
  const { ALL_PERMISSIONS } = await import("../../../src/trpc/permissions.js");
  return h.createKey(h.defaultOrgId, ALL_PERMISSIONS.filter((p) => p !== "platform:admin"), { userId: (await adminUser(h)).id });
}

/** The latest message the outbox holds for `to`, its body unsealed. */
export async function lastMail(h: Harness, to: string, template?: string) {
  const row = await h.services.prisma.mailOutbox.findFirst({
    where: { to, ...(template ? { template } : {}) },
    orderBy: { createdAt: "desc" },
  });
  expect(row, `a ${template ?? ""} mail to ${to}`).not.toBeNull();
  return { ...row!, text: h.services.secrets.decrypt(row!.bodySealed) };
}

export function tokenIn(text: string, prefix: "fmp_" | "fmv_") {
  const match = new RegExp(`${prefix}[0-9A-Za-z]{40}`).exec(text);
  expect(match, `a ${prefix} token in the mail`).not.toBeNull();
  return match![0];
}

/** The field paths a 400 names (the REST body's issues). */
export const issuePaths = (body: { issues?: { path: string[] }[]; data?: { issues?: { path: string[] }[] } }) =>
  (body.issues ?? []).map((i) => i.path.join("."));

export const randomId = () => crypto.randomUUID();
