// POST /api/v1/users/export: the users the caller may see, as a CSV or JSON download.
// A plain express route (procedures only answer JSON) behind the procedures' gate
// (guardedJsonRoute: authentication, permission, audited refusals, error body).
import express, { type Router } from "express";
import type { Services } from "../../services.js";
import { writeAudit } from "../../trpc/audit.js";
import { exportUsersInput } from "./schemas.js";
import { CSV_COLUMNS, csvCells, csvRecord, exportBatches } from "./export.js";
import { errorResponse, type ExtraPaths } from "../../http/docs.js";
import { guardedJsonRoute } from "../../http/guarded-route.js";
import { counted } from "../../lib/plural.js";

const PATH = "users.export";

export function usersExportRoutes(services: Services): Router {
  const r = express.Router();
  r.post(
    "/users/export",
    guardedJsonRoute(services, { label: PATH, access: { permission: "users:read" }, body: exportUsersInput }, async ({ principal, request, input, res }) => {
      const { format, ...filter } = input;
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
        next = await batches.next(); // a failure here cuts the download short, visibly (guardedJsonRoute)
      }
      res.end(format === "csv" ? "" : "\n]\n");

      await writeAudit(services.prisma, request, principal, {
        action: PATH,
        outcome: "success",
        entityType: "user",
        changes: input,
        message: `exported ${counted(count, "user")} as ${format}`,
      }).catch((err: Error) => services.logger.warn({ err: err.message }, "could not record the users export"));
    }),
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
