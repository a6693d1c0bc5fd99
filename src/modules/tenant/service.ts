// Tenant switching: a bearer session acts in another organization for a bounded time. The
// switch changes Session.organizationId, so authentication, permissions (the user's role in
// the target, or everything for a Super Admin), tenant scoping and the audit trail all
// follow without any other code knowing; the real user stays the principal's userId.
// Return ends it here; expiry and lost access end it in src/trpc/auth.ts (lifecycle.ts).
import type { DbTx } from "../../db/client.js";
import type { Prisma } from "../../generated/prisma/client.js";
import type { AuditNote } from "../../trpc/audit.js";
import { conflict, forbidden, notFound } from "../../trpc/errors.js";
import { ALL_PERMISSIONS } from "../../trpc/permissions.js";
import { can, type Principal } from "../../trpc/principal.js";
import { pageOf } from "../../lib/paging.js";
import { containsText } from "../../lib/like.js";
import { endTenantSwitch } from "../../trpc/tenant-switch.js";
import { isSwitchActive, toSwitchRecord } from "./schemas.js";
import { counted } from "../../lib/plural.js";

const withSession = { session: { select: { revokedAt: true, expiresAt: true } } } as const;

function openSwitchOf(db: DbTx, sessionId: string) {
  return db.tenantSwitch.findFirst({ where: { sessionId, endedAt: null }, orderBy: { switchedAt: "desc" }, include: withSession });
}

export async function switchTenant(
  db: DbTx,
  principal: Principal & { sessionId: string },
  audit: AuditNote | null,
  input: { organizationId: string; reason?: string; durationMinutes: number },
) {
  const target = await db.organization.findUnique({ where: { id: input.organizationId }, select: { id: true, name: true, status: true } });
  const membership = target && !principal.isSuperAdmin
    ? await db.membership.findUnique({ where: { organizationId_userId: { organizationId: target.id, userId: principal.userId } } })
    : null;
  // Only a Super Admin may enter any organization; others only those they belong to. An
  // organization the caller may not enter is not found, so its existence does not leak.
  if (!target || (!principal.isSuperAdmin && !membership)) throw notFound("Organization");
  if (target.status !== "active" && !principal.isSuperAdmin) {
    throw forbidden(`Organization "${target.name}" is ${target.status}; it cannot be used until it is enabled again`);
  }
  if (target.id === principal.organizationId) throw conflict("You are already acting in this organization");
  const open = await openSwitchOf(db, principal.sessionId);
  const homeId = open ? open.fromOrgId : principal.organizationId;
  if (target.id === homeId) throw conflict("This is your home organization: end the switch with POST /api/v1/tenant/return");
  if (open) await endTenantSwitch(db, open, "replaced");
  const home = homeId ? await db.organization.findUnique({ where: { id: homeId }, select: { name: true } }) : null;
  const now = new Date();
  const created = await db.tenantSwitch.create({
    data: {
      userId: principal.userId,
      sessionId: principal.sessionId,
      fromOrgId: homeId,
      fromOrgName: home?.name ?? null,
      toOrgId: target.id,
      toOrgName: target.name,
      reason: input.reason ?? null,
      durationMinutes: input.durationMinutes,
      switchedAt: now,
      expiresAt: new Date(now.getTime() + input.durationMinutes * 60_000),
    },
    include: withSession,
  });
  await db.session.update({ where: { id: principal.sessionId }, data: { organizationId: target.id } });
  // The entry belongs to the tenant entered: its administrators see who came in and why.
  if (audit) {
    audit.organizationId = target.id;
    audit.message = `switched from ${home?.name ?? "no organization"} to ${target.name} for ${counted(input.durationMinutes, "minute")}` +
      (input.reason ? `: ${input.reason}` : "");
  }
  return toSwitchRecord(created);
}

export async function returnFromSwitch(db: DbTx, principal: Principal & { sessionId: string }, audit: AuditNote | null) {
  const open = await openSwitchOf(db, principal.sessionId);
  if (!open || !isSwitchActive(open)) throw conflict("No tenant switch is active for this session");
  await endTenantSwitch(db, open, "returned");
  if (audit) {
    audit.organizationId = open.toOrgId;
    audit.message = `returned from ${open.toOrgName ?? open.toOrgId} to ${open.fromOrgName ?? "home"}`;
  }
  const ended = await db.tenantSwitch.findUniqueOrThrow({ where: { id: open.id }, include: withSession });
  return toSwitchRecord(ended);
}

export async function currentContext(db: DbTx, principal: Principal) {
  const [user, org, membership, open] = await Promise.all([
    db.user.findUniqueOrThrow({ where: { id: principal.userId }, select: { email: true, name: true } }),
    db.organization.findUniqueOrThrow({ where: { id: principal.organizationId }, select: { id: true, name: true, slug: true, status: true } }),
    db.membership.findUnique({
      where: { organizationId_userId: { organizationId: principal.organizationId, userId: principal.userId } },
      select: { role: { select: { name: true } } },
    }),
    principal.tenantSwitch ? db.tenantSwitch.findUnique({ where: { id: principal.tenantSwitch.id }, include: withSession }) : null,
  ]);
  const home = open?.fromOrgId
    ? await db.organization.findUnique({ where: { id: open.fromOrgId }, select: { id: true, name: true, slug: true, status: true } })
    : null;
  return {
    credential: principal.kind === "api_key" ? ("api_key" as const) : ("session" as const),
    userId: principal.userId,
    email: user.email,
    name: user.name,
    isSuperAdmin: principal.isSuperAdmin,
    organization: org,
    role: membership?.role.name ?? null,
    permissions: ALL_PERMISSIONS.filter((p) => can(principal, p)),
    homeOrganization: home,
    activeSwitch: open ? toSwitchRecord(open) : null,
    canSwitch: principal.kind === "user" && !!principal.sessionId,
  };
}

/**
 * Organizations the caller may act in: every one for a Super Admin, their memberships for
 * others, and only its own organization for an API key (keys are bound to it).
 */
export async function accessibleTenants(db: DbTx, principal: Principal, page: { limit: number; offset: number }) {
  const where: Prisma.OrganizationWhereInput = principal.kind === "api_key"
    ? { id: principal.organizationId }
    : principal.isSuperAdmin
      ? {}
      : { memberships: { some: { userId: principal.userId } } };
  const [orgs, total] = await Promise.all([
    db.organization.findMany({
      where,
      orderBy: [{ name: "asc" }, { id: "asc" }],
      take: page.limit,
      skip: page.offset,
      select: {
        id: true, name: true, slug: true, status: true,
        memberships: { where: { userId: principal.userId }, select: { role: { select: { name: true } } } },
      },
    }),
    db.organization.count({ where }),
  ]);
  const homeId = principal.tenantSwitch ? principal.tenantSwitch.fromOrganizationId : principal.organizationId;
  const items = orgs.map((o) => ({
    id: o.id,
    name: o.name,
    slug: o.slug,
    status: o.status,
    role: o.memberships[0]?.role.name ?? null,
    isCurrent: o.id === principal.organizationId,
    isHome: o.id === homeId,
  }));
  return pageOf(items, total, page.offset);
}

export async function ownSwitchHistory(db: DbTx, principal: Principal, page: { limit: number; offset: number }) {
  const where = { userId: principal.userId };
  const [rows, total] = await Promise.all([
    db.tenantSwitch.findMany({ where, orderBy: [{ switchedAt: "desc" }, { id: "desc" }], take: page.limit, skip: page.offset, include: withSession }),
    db.tenantSwitch.count({ where }),
  ]);
  const now = new Date();
  return pageOf(rows.map((r) => toSwitchRecord(r, now)), total, page.offset);
}

/** Spec operation 17: every active switch (administrator view), newest first. */
export async function activeSwitches(db: DbTx, page: { limit: number; offset: number }) {
  const now = new Date();
  const where: Prisma.TenantSwitchWhereInput = {
    endedAt: null,
    expiresAt: { gt: now },
    session: { is: { revokedAt: null, expiresAt: { gt: now } } },
  };
  const [rows, total] = await Promise.all([
    db.tenantSwitch.findMany({ where, orderBy: [{ switchedAt: "desc" }, { id: "desc" }], take: page.limit, skip: page.offset, include: withSession }),
    db.tenantSwitch.count({ where }),
  ]);
  return pageOf(rows.map((r) => toSwitchRecord(r, now)), total, page.offset);
}

/** Members of the organization the caller acts in (the tenant, during a switch). */
export async function tenantMembers(db: DbTx, principal: Principal, page: { limit: number; offset: number; search?: string }) {
  const where: Prisma.MembershipWhereInput = {
    organizationId: principal.organizationId,
    ...(page.search
      ? { user: { OR: [{ email: containsText(page.search) }, { name: containsText(page.search) }] } }
      : {}),
  };
  const [rows, total] = await Promise.all([
    db.membership.findMany({
      where,
      orderBy: [{ createdAt: "asc" }, { userId: "asc" }],
      take: page.limit,
      skip: page.offset,
      select: {
        createdAt: true,
        roleId: true,
        role: { select: { name: true } },
        user: { select: { id: true, email: true, name: true, status: true, lastLoginAt: true } },
      },
    }),
    db.membership.count({ where }),
  ]);
  const items = rows.map((m) => ({
    userId: m.user.id,
    email: m.user.email,
    name: m.user.name,
    status: m.user.status,
    roleId: m.roleId,
    role: m.role.name,
    joinedAt: m.createdAt.toISOString(),
    lastLoginAt: m.user.lastLoginAt?.toISOString() ?? null,
  }));
  return { ...pageOf(items, total, page.offset), organizationId: principal.organizationId };
}
