// POST /api/v1/users/export: the users the caller may see, as a CSV or JSON download.
// A plain express route (procedures only answer JSON) with the procedures' own
// authentication, permission check and audit (authenticateRequest, can, denyAccess).
import express, { type NextFunction, type Request, type Response, type Router } from "express";
import { TRPCError } from "@trpc/server";
import { getHTTPStatusCodeFromError } from "@trpc/server/http";
import type { Services } from "../services.js";
import { authenticateRequest, denyAccess } from "../trpc/procedures.js";
import { writeAudit } from "../trpc/audit.js";
import { requestIdOf, requestInfoOf } from "../trpc/context.js";
import { can } from "../trpc/principal.js";
import { exportUsersInput } from "../modules/users/schemas.js";
import { CSV_COLUMNS, csvCells, csvRecord, exportBatches } from "../modules/users/export.js";
import { errorResponse, type ExtraPaths } from "./docs.js";

const PATH = "users.export";

/** The REST facade's error body: { code, message, data: { code, httpStatus, requestId, issues? }, issues? }. */
function sendError(req: Request, res: Response, err: TRPCError, issues?: { path: string[]; message: string; code: string }[]) {
  const httpStatus = getHTTPStatusCodeFromError(err);
  res.status(httpStatus).json({
    code: err.code,
    message: err.message,
    data: { code: err.code, httpStatus, requestId: requestIdOf(req), ...(issues ? { issues } : {}) },
    ...(issues ? { issues } : {}),
  });
}

async function exportUsers(services: Services, req: Request, res: Response) {
  const request = requestInfoOf(req);
  const principal = await authenticateRequest(services, request, req.headers, PATH, res);
  if (!can(principal, "users:read")) await denyAccess({ services, request }, principal, PATH, "Missing permission users:read");

  if (req.body === undefined && req.headers["content-type"] && !req.is("application/json")) {
    throw new TRPCError({ code: "UNSUPPORTED_MEDIA_TYPE", message: "Send the filters as application/json" });
  }
  const parsed = exportUsersInput.safeParse(req.body ?? {});
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => ({ path: i.path.map(String), message: i.message, code: i.code }));
    const message = `Invalid input: ${issues.map((i) => `${i.path.join(".") || "(body)"}: ${i.message}`).join("; ")}`;
    return sendError(req, res, new TRPCError({ code: "BAD_REQUEST", message }), issues);
  }
  const { format, ...filter } = parsed.data;

  // The first batch is read before any header goes out, so that a failing database still
  // answers with a proper error status instead of a truncated file.
  const batches = exportBatches(services.prisma, principal, filter);
  let next = await batches.next();
  const stamp = new Date().toISOString().slice(0, 10);
  res.setHeader("Content-Type", format === "csv" ? "text/csv; charset=utf-8" : "application/json; charset=utf-8");
  res.setHeader("Content-Disposition", `attachment; filename="users-${stamp}.${format}"`);
  res.setHeader("Cache-Control", "no-store");

  let count = 0;
  res.write(format === "csv" ? csvRecord(CSV_COLUMNS) : "[");
  while (!next.done) {
    for (const user of next.value) {
      res.write(format === "csv" ? csvRecord(csvCells(user)) : `${count > 0 ? "," : ""}\n${JSON.stringify(user)}`);
      count++;
    }
    next = await batches.next();
  }
  res.end(format === "csv" ? "" : "\n]\n");

  await writeAudit(services.prisma, request, principal, {
    action: PATH,
    outcome: "success",
    entityType: "user",
    changes: parsed.data,
    message: `exported ${count} users as ${format}`,
  }).catch((err: Error) => services.logger.warn({ err: err.message }, "could not record the users export"));
}

export function usersExportRoutes(services: Services): Router {
  const r = express.Router();
  r.post(
    "/users/export",
    express.json({ limit: services.config.BODY_LIMIT_BYTES }),
    (req: Request, res: Response, next: NextFunction) => {
      exportUsers(services, req, res).catch((err: unknown) => {
        if (err instanceof TRPCError && err.code !== "INTERNAL_SERVER_ERROR" && !res.headersSent) return sendError(req, res, err);
        if (res.headersSent) return void res.destroy(err as Error); // mid-stream: cut the download short, visibly
        next(err);
      });
    },
  );
  return r;
}


export const usersExportOpenApiPaths: ExtraPaths = {
  "/users/export": {
    post: {
      operationId: "users-export",
      tags: ["Users"],
      summary: "Export the users you may see as CSV or JSON (users:read; Super Admin: all users)",
      security: [{ ApiKey: [] }, { Bearer: [] }],
      requestBody: {
        required: false,
        content: {
          "application/json": {
            schema: {
              type: "object",
              properties: {
                format: { type: "string", enum: ["csv", "json"], default: "csv" },
                search: { type: "string", maxLength: 100, description: "part of the e-mail or name, case-insensitive" },
                status: { type: "string", enum: ["active", "disabled"] },
                organizationId: { type: "string", format: "uuid", description: "only members of this organization" },
                superAdmin: { type: "boolean" },
              },
              additionalProperties: false,
            },
          },
        },
      },
      responses: {
        200: {
          description: "The file, as an attachment. CSV: RFC 4180 with a header row and CRLF line ends; " +
            "`organizations` holds `slug:role` pairs separated by `;`. JSON: an array of user objects.",
          headers: { "Content-Disposition": { schema: { type: "string" }, description: 'attachment; filename="users-YYYY-MM-DD.csv"' } },
          content: {
            "text/csv": { schema: { type: "string" } },
            "application/json": { schema: { type: "array", items: { type: "object" } } },
          },
        },
        400: errorResponse("Invalid input data (the message and issues name the field)"),
        401: errorResponse("Authentication missing or invalid"),
        403: errorResponse("Missing permission users:read"),
        415: errorResponse("The body is not JSON"),
      },
    },
  },
};
