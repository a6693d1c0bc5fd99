// Small helpers shared by the roles, members, invitations and API-key tests: people with a
// given role in an organization, and the user behind a key.
import crypto from "node:crypto";
import { hashPassword, sha256Hex } from "../../../src/lib/crypto.js";
import type { Harness } from "../../support/harness.js";

export interface Person {
  userId: string;
  email: string;
  password: string;
  /** a key of this person holding `*` (bounded by their role) */
  key: string;
}

/** A new user who is a member of `organizationId` with the named role (system or custom). */
export async function personWithRole(h: Harness, organizationId: string, roleName: string, keyPermissions = ["*"]): Promise<Person> {
  const role = await h.services.prisma.role.findFirstOrThrow({
    where: { name: roleName, OR: [{ organizationId: null }, { organizationId }] },
  });
  const email = `${roleName}-${crypto.randomBytes(4).toString("hex")}@example.test`;
  const password = "person-password-123";
  const user = await h.services.prisma.user.create({ data: { email, name: `A ${roleName}`, passwordHash: await hashPassword(password) } });
  await h.services.prisma.membership.create({ data: { organizationId, userId: user.id, roleId: role.id } });
  const key = await h.createKey(organizationId, keyPermissions, { userId: user.id });
  return { userId: user.id, email, password, key };
}

export async function userIdOfKey(h: Harness, key: string): Promise<string> {
  const row = await h.services.prisma.apiKey.findUniqueOrThrow({ where: { keyHash: sha256Hex(key) } });
  return row.createdById!;
}

export async function systemRoleId(h: Harness, name: string): Promise<string> {
  return (await h.services.prisma.role.findFirstOrThrow({ where: { organizationId: null, name } })).id;
}

/** The field paths a 400 names. */
export const issuePaths = (body: { issues?: { path: string[] }[] }) => (body.issues ?? []).map((i) => i.path.join("."));
