// The tRPC instance: context, meta and the error formatter that every error leaves through.
import { initTRPC, TRPCError } from "@trpc/server";
import type { OpenApiMeta } from "trpc-to-openapi";
import { ZodError } from "zod";
import { requestIdOfError, type Context } from "./context.js";
import { inputIssues, invalidInputMessage } from "./errors.js";
import type { FieldPattern } from "../lib/unstorable-strings.js";

export interface Meta extends OpenApiMeta {
  /** HTTP status of a successful REST call (201 for creations) */
  successStatus?: 200 | 201 | 202;
  /**
   * Mutations are audited by default, inside their own transaction. `false` for the few that
   * record their own entries (login, ...). `entity` names the entity type of the entry.
   */
  audit?: false | { entity?: string; action?: string };
  /** set by superAdminProcedure: a platform operation (Super Admin; a key must name platform:admin) */
  superAdmin?: true;
  /**
   * Text fields of the input ("*" for any index or key) whose NUL characters and unpaired
   * surrogates become U+FFFD, where any other string holding them refuses the request (the
   * boundary, src/http/storable-input.ts). Only for text that is a record of what a device saw.
   */
  lossyText?: FieldPattern[];
  /**
   * Device ingest (telemetry and log batches): admitted through the per-process ingest gate
   * before its body is read, refused with 503 and Retry-After when busy (src/http/ingest-admission.ts).
   */
  ingest?: true;
  /**
   * The MCP server's view of the procedure (src/modules/mcp, docs/mcp.md): `false` keeps it out
   * of the tools; hints override what the query/mutation type and the REST method imply.
   */
  mcp?: false | McpHints;
}

/** MCP tool annotations of a procedure, where its type and REST method say too little. */
export interface McpHints {
  /** a mutation that changes nothing (a dry run, a test send) */
  readOnly?: boolean;
  /** the change may remove or overwrite data (DELETE implies it) */
  destructive?: boolean;
  /** calling again with the same input changes nothing more (queries, PUT and DELETE imply it) */
  idempotent?: boolean;
  /** the call reaches systems outside the service (registries, notification targets) */
  openWorld?: boolean;
}

export const t = initTRPC
  .context<Context>()
  .meta<Meta>()
  .create({
    // Never send a stack, SQL text or internal message: only deliberate errors keep theirs.
    errorFormatter({ shape, error, ctx }) {
      const internal = error.code === "INTERNAL_SERVER_ERROR";
      if (internal) ctx?.services.logger.error({ err: describe(error.cause ?? error), requestId: ctx.request.requestId }, "internal error");
      const issues = error.cause instanceof ZodError ? inputIssues(error.cause) : undefined;
      const message = internal
        ? "Internal server error"
        : issues
          ? invalidInputMessage(issues)
          // trpc-to-openapi's own text for this one is garbled (an unclosed quote around the type).
          : error.code === "UNSUPPORTED_MEDIA_TYPE" ? "Send the body as application/json" : error.message;
      return {
        message,
        code: shape.code,
        data: {
          code: error.code,
          httpStatus: shape.data.httpStatus,
          requestId: ctx?.request.requestId ?? requestIdOfError(error),
          ...(issues ? { issues } : {}),
        },
      };
    },
  });

function describe(err: unknown) {
  if (err instanceof Error) return { name: err.name, message: err.message, stack: err.stack };
  return { value: String(err) };
}

export { TRPCError };
