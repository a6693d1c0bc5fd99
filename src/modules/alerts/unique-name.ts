// Rules and targets have names unique within their organization. Inside an interactive
// transaction the driver adapter's error reaches us untranslated (a DriverAdapterError: kind
// UniqueConstraintViolation from adapter-pg, kind "postgres" with SQLSTATE 23505 from the
// PGlite adapter; not Prisma's P2002), so the duplicate is turned into the 409 here.
import { conflict } from "../../trpc/errors.js";

function isUniqueViolation(err: unknown): boolean {
  const e = err as { code?: string; cause?: { kind?: string; code?: string; originalCode?: string } } | null;
  return !!e && (e.code === "P2002" || e.cause?.kind === "UniqueConstraintViolation" || e.cause?.code === "23505" || e.cause?.originalCode === "23505");
}

export async function withUniqueName<T>(what: string, name: string | undefined, write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (err) {
    if (isUniqueViolation(err)) throw conflict(`A ${what} named "${name ?? ""}" already exists in this organization`);
    throw err;
  }
}
