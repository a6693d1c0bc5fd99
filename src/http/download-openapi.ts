// The OpenAPI path item of a streamed download route: the JSON body schema comes from its zod
// schema (the one the route validates with), the answer is a CSV or JSON file.
import { z } from "zod";

const errorBody = {
  type: "object",
  properties: { code: { type: "string" }, message: { type: "string" }, data: { type: "object" } },
  required: ["code", "message"],
};
const error = (description: string) => ({ description, content: { "application/json": { schema: errorBody } } });

export function downloadPathItem(o: { operationId: string; tag: string; summary: string; description: string; body: z.ZodType; fileBase: string }) {
  const { $schema: _ignored, ...schema } = z.toJSONSchema(o.body, { io: "input", unrepresentable: "any" }) as Record<string, unknown>;
  return {
    post: {
      operationId: o.operationId,
      tags: [o.tag],
      summary: o.summary,
      description: o.description,
      security: [{ ApiKey: [] }, { Bearer: [] }],
      requestBody: { required: false, content: { "application/json": { schema } } },
      responses: {
        200: {
          description: "The file, streamed",
          headers: {
            "Content-Disposition": { schema: { type: "string" }, description: `attachment; filename="${o.fileBase}-<UTC timestamp>.<csv|json>"` },
          },
          content: {
            "text/csv": { schema: { type: "string" } },
            "application/json": { schema: { type: "array", items: { type: "object" } } },
          },
        },
        400: error("Invalid input data"),
        401: error("Authentication missing or invalid"),
        403: error("Missing permission"),
        415: error("Body is not JSON"),
      },
    },
  };
}
