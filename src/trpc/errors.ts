// Domain errors are TRPCErrors with the right code; everything else is translated here
// once (database errors) or masked by the error formatter (anything unexpected).
import { TRPCError } from "@trpc/server";
import { z, type ZodError } from "zod";
import { plural } from "../lib/plural.js";

export const notFound = (what: string) => new TRPCError({ code: "NOT_FOUND", message: `${what} not found` });
export const conflict = (message: string) => new TRPCError({ code: "CONFLICT", message });
export const badRequest = (message: string) => new TRPCError({ code: "BAD_REQUEST", message });
export const forbidden = (message = "You do not have permission to do this") => new TRPCError({ code: "FORBIDDEN", message });
export const unauthorized = (message = "Authentication required") => new TRPCError({ code: "UNAUTHORIZED", message });
export const unavailable = (message: string) => new TRPCError({ code: "SERVICE_UNAVAILABLE", message });

/**
 * A 400 shaped like every other invalid input (`issues` names the field). ZodRealError, not
 * ZodError: in zod 4 only the former is an Error, which is what the REST adapter looks for.
 */
export function invalidField(field: string | string[], message: string) {
  const path = Array.isArray(field) ? field : [field];
  return new TRPCError({ code: "BAD_REQUEST", message, cause: new z.ZodRealError([{ code: "custom", path, message, input: undefined }]) });
}

/**
 * The error body the error formatter (./init.ts) gives every answer, for the few answers that
 * express writes itself (rate limits, unknown paths, unparseable requests, upgrades).
 */
export function errorBody(requestId: string, httpStatus: number, code: string, message: string) {
  return { code, message, data: { code, httpStatus, requestId } };
}

/** One invalid field of an input: its path and what is wrong with it. */
export interface InputIssue {
  path: string[];
  message: string;
  code: string;
}

// zod's default sentence for a value of the wrong type ("Invalid input: expected number, received NaN").
const WRONG_TYPE = /^Invalid input: expected (\w+), received (\w+)$/;

/** zod's default wording, said shortly; a schema's own message is kept as it is. */
function shortMessage(issue: ZodError["issues"][number]): string {
  if (issue.code === "unrecognized_keys") return `unknown ${plural(issue.keys.length, "field")} ${issue.keys.map((k) => JSON.stringify(k)).join(", ")}`;
  const wrongType = issue.code === "invalid_type" ? WRONG_TYPE.exec(issue.message) : null;
  if (!wrongType) return issue.message;
  const [, expected, received] = wrongType;
  if (received === "undefined") return "required";
  if (expected === "int") return "must be a whole number";
  if (expected === "number") return "must be a number";
  return `must be ${/^[aeiou]/.test(expected) ? "an" : "a"} ${expected}, not ${received}`;
}

/** The invalid fields of an input, named by their paths ("commonName: required", "limit: must be a number"). */
export function inputIssues(error: ZodError): InputIssue[] {
  return error.issues.map((i) => ({ path: i.path.map(String), message: shortMessage(i), code: i.code }));
}

/** The message of a validation error: every invalid field with what is wrong with it. */
export function invalidInputMessage(issues: InputIssue[]): string {
  return `Invalid input: ${issues.map((i) => (i.path.length ? `${i.path.join(".")}: ${i.message}` : i.message)).join("; ")}`;
}

interface PrismaLikeError {
  name?: string;
  code?: string;
  meta?: { target?: string[] | string; modelName?: string; driverAdapterError?: { cause?: { originalCode?: string; kind?: string; constraint?: { fields?: string[] } } } };
  cause?: { code?: string; originalCode?: string; kind?: string; message?: string; constraint?: { fields?: string[] } };
}

/** The PostgreSQL SQLSTATE behind a Prisma error, whichever driver adapter reported it. */
function sqlState(err: PrismaLikeError): string | undefined {
  // Inside interactive transactions the driver adapter's own error arrives untranslated.
  if (err.cause?.kind === "UniqueConstraintViolation") return "23505";
  if (err.cause?.kind === "ForeignKeyConstraintViolation") return "23503";
  return err.meta?.driverAdapterError?.cause?.originalCode ?? err.cause?.originalCode ?? err.cause?.code ?? (/^\d{5}$/.test(err.code ?? "") ? err.code : undefined);
}

const CONNECTION_ERRORS = /ECONNREFUSED|ECONNRESET|Connection terminated|connect ETIMEDOUT|database system is (shutting down|starting up)|terminating connection/i;

/** Maps database errors that carry a meaning for the caller; null for everything else. */
export function translateDatabaseError(cause: unknown): TRPCError | null {
  const err = cause as PrismaLikeError & Error;
  if (!err || typeof err !== "object") return null;
  const state = sqlState(err);
  if (err.code === "P2002" || state === "23505") {
    // "Model_field1_field2_key" is how Prisma names unique indexes.
    const index = /unique constraint "([A-Za-z]+)_(\w+)_key"/.exec(err.cause?.message ?? err.message ?? "");
    const fields = err.meta?.target ?? err.meta?.driverAdapterError?.cause?.constraint?.fields ?? err.cause?.constraint?.fields ?? index?.[2].split("_");
    const model = err.meta?.modelName ?? index?.[1] ?? "resource";
    const list = Array.isArray(fields) ? fields.filter((f) => f !== "organizationId").join(", ") : fields;
    return conflict(list ? `A ${model} with this ${list} already exists` : "Resource already exists");
  }
  if (err.code === "P2025") return notFound(err.meta?.modelName ?? "Resource");
  if (err.code === "P2003" || state === "23503") return conflict("The resource is still referenced by other resources");
  if (err.code === "P1001" || err.code === "P1017" || CONNECTION_ERRORS.test(err.message ?? "")) {
    return unavailable("The database is unavailable; try again shortly");
  }
  return null;
}
