// Export of the users the caller may see, as CSV or JSON. Rows are read in batches (keyset
// on createdAt, id) and written as they come, so a large installation is not held in memory.
import type { DbTx } from "../../db/client.js";
import type { Principal } from "../../trpc/principal.js";
import { toUserDto, userInclude, type UserDto } from "./schemas.js";
import { userWhere, type UserFilter } from "./service.js";

const BATCH = 500;

export async function* exportBatches(db: DbTx, principal: Principal, filter: UserFilter): AsyncGenerator<UserDto[]> {
  const where = userWhere(principal, filter);
  let cursor: string | undefined;
  for (;;) {
    const rows = await db.user.findMany({
      where,
      include: userInclude(principal),
      orderBy: [{ createdAt: "asc" }, { id: "asc" }],
      take: BATCH,
      ...(cursor ? { cursor: { id: cursor }, skip: 1 } : {}),
    });
    if (rows.length === 0) return;
    yield rows.map(toUserDto);
    if (rows.length < BATCH) return;
    cursor = rows[rows.length - 1].id;
  }
}

export const CSV_COLUMNS = [
  "id", "email", "name", "status", "isSuperAdmin", "emailVerified", "hasPassword",
  "identityIssuer", "identitySubject", "lastLoginAt", "createdAt", "organizations",
] as const;

export function csvCells(u: UserDto): unknown[] {
  return [
    u.id, u.email, u.name, u.status, u.isSuperAdmin, u.emailVerified, u.hasPassword,
    u.identity?.issuer, u.identity?.subject, u.lastLoginAt, u.createdAt,
    u.organizations.map((m) => `${m.organizationSlug}:${m.roleName}`).join(";"),
  ];
}

// RFC 4180 by hand rather than a dependency: quoting is the whole job, ten lines.
/** One field: quoted when it holds a comma, quote or line break, quotes doubled. */
export function csvField(value: unknown): string {
  let s = value === null || value === undefined ? "" : String(value);
  // A cell starting with = + - @ is run as a formula by spreadsheets (CSV injection): make it text.
  if (/^[=+\-@\t\r]/.test(s)) s = `'${s}`;
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

/** One record, CRLF-terminated as RFC 4180 writes it. */
export const csvRecord = (cells: readonly unknown[]) => cells.map(csvField).join(",") + "\r\n";
