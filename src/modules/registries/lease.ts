// The sync lease of a registry-like row (Git and OCI registries, marketplace store): one conditional
// UPDATE that succeeds only when no unexpired lease exists, so that a second sync of the same
// row is refused in any process (the row lock serializes concurrent callers); a crashed
// process's lease expires by itself.
import { randomUUID } from "node:crypto";

/** The rows' table: a Prisma delegate of a model with syncLeaseId / syncLeaseUntil columns. */
export interface LeaseTable {
  updateMany(args: {
    where: { id: string; syncLeaseId?: string; OR?: Array<{ syncLeaseUntil: null } | { syncLeaseUntil: { lt: Date } }> };
    data: { syncLeaseId: string | null; syncLeaseUntil: Date | null };
  }): PromiseLike<{ count: number }>;
}

export async function acquireLease(table: LeaseTable, id: string, ttlMs: number): Promise<string | null> {
  const leaseId = randomUUID();
  const now = new Date();
  const { count } = await table.updateMany({
    where: { id, OR: [{ syncLeaseUntil: null }, { syncLeaseUntil: { lt: now } }] },
    data: { syncLeaseId: leaseId, syncLeaseUntil: new Date(now.getTime() + ttlMs) },
  });
  return count === 1 ? leaseId : null;
}

export async function releaseLease(table: LeaseTable, id: string, leaseId: string): Promise<void> {
  await table.updateMany({ where: { id, syncLeaseId: leaseId }, data: { syncLeaseId: null, syncLeaseUntil: null } });
}
