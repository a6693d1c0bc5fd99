// Keyset pages over the audit trail, newest first, for the streamed exports: each page is
// one indexed query that starts after the last row of the previous page, so an export of
// any size holds one page in memory and never pays for a growing OFFSET.
import type { DbTx } from "../../db/client.js";
import type { AuditEntry, Prisma } from "../../generated/prisma/client.js";
import { NEWEST_FIRST } from "./service.js";

export const EXPORT_PAGE_SIZE = 500;

export async function* auditPages(db: DbTx, where: Prisma.AuditEntryWhereInput, maxRecords: number, pageSize = EXPORT_PAGE_SIZE): AsyncGenerator<AuditEntry[]> {
  let last: { createdAt: Date; id: string } | null = null;
  let remaining = maxRecords;
  while (remaining > 0) {
    // `createdAt <= last` is implied by the OR but lets the planner scan the createdAt index
    // as a range instead of reading the organization's whole trail for every page.
    const after: Prisma.AuditEntryWhereInput | null = last
      ? { createdAt: { lte: last.createdAt }, OR: [{ createdAt: { lt: last.createdAt } }, { createdAt: last.createdAt, id: { lt: last.id } }] }
      : null;
    const page: AuditEntry[] = await db.auditEntry.findMany({
      where: after ? { AND: [where, after] } : where,
      orderBy: NEWEST_FIRST,
      take: Math.min(pageSize, remaining),
    });
    if (page.length === 0) return;
    yield page;
    remaining -= page.length;
    if (page.length < Math.min(pageSize, remaining + page.length)) return;
    last = page[page.length - 1];
  }
}
