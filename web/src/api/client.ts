// The console's one door to the service: the tRPC client typed by the server's own router
// (a type-only import: nothing of the server reaches the bundle). Every procedure's input and
// output type comes from its zod schemas; there is no hand-written copy of any of them.
//
// The browser authenticates with the HttpOnly session cookie (same-origin fetches send it);
// no token is ever visible to scripts. Queries go out as GET (batched), mutations as POST,
// which the service accepts only from this origin (CSRF rule, src/http/csrf.ts).
import { createTRPCClient, httpBatchLink, TRPCClientError } from "@trpc/client";
import type { inferRouterInputs, inferRouterOutputs } from "@trpc/server";
import type { AppRouter } from "../../../src/trpc/router";

export type { AppRouter };
export type RouterInputs = inferRouterInputs<AppRouter>;
export type RouterOutputs = inferRouterOutputs<AppRouter>;

export const api = createTRPCClient<AppRouter>({
  links: [httpBatchLink({ url: "/trpc", maxURLLength: 6000 })],
});

/** What the service's error formatter puts in every error (src/trpc/init.ts). */
export interface ApiErrorData {
  code: string;
  httpStatus: number;
  requestId?: string;
  issues?: { path: (string | number)[]; message: string }[];
}

export type ApiError = TRPCClientError<AppRouter>;

export function isApiError(error: unknown): error is ApiError {
  return error instanceof TRPCClientError;
}

/** The HTTP status of a failed call (0: the service could not be reached). */
export function statusOf(error: unknown): number {
  if (!isApiError(error)) return 0;
  return (error.data as ApiErrorData | undefined)?.httpStatus ?? 0;
}

export function requestIdOf(error: unknown): string | undefined {
  return isApiError(error) ? (error.data as ApiErrorData | undefined)?.requestId : undefined;
}

/** The API's own sentence for a failure, with the fields it names. */
export function messageOf(error: unknown): string {
  if (!isApiError(error)) return error instanceof Error ? error.message : String(error);
  if (statusOf(error) === 0) return "The service cannot be reached. Check your connection; the page retries by itself.";
  return error.message;
}

/** Names the form field an API message (and its issue path) is about, or null: not a field's. */
export type FieldOf = (message: string, path?: readonly (string | number)[]) => string | null;

/**
 * A refusal split into the messages about fields (shown next to them) and the rest (shown in an
 * ErrorBox). Only 400 and 409 are about the input; other statuses are always "the rest".
 */
export function splitRefusal(err: unknown, fieldOf: FieldOf): { fields: Record<string, string>; rest: unknown } {
  const status = statusOf(err);
  if (!isApiError(err) || (status !== 400 && status !== 409)) return { fields: {}, rest: err };
  const issues = (err.data as ApiErrorData | undefined)?.issues;
  const fields: Record<string, string> = {};
  if (issues?.length) {
    for (const issue of issues) {
      const field = fieldOf(issue.message, issue.path);
      if (!field) return { fields: {}, rest: err };
      fields[field] ??= issue.message;
    }
    return { fields, rest: null };
  }
  const field = fieldOf(err.message);
  return field ? { fields: { [field]: err.message }, rest: null } : { fields: {}, rest: err };
}
