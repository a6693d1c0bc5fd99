// GET /api/v1/realtime is a WebSocket endpoint: the upgrade is handled on the HTTP server
// (upgrade.ts). A plain GET lands here and is told to upgrade; the path
// item documents the handshake in openapi.json.
import express, { type Router } from "express";
import { errorResponse, type ExtraPaths } from "../../http/docs.js";
import { requestIdOf } from "../../trpc/context.js";
import { errorBody } from "../../trpc/errors.js";

export function realtimeRoutes(): Router {
  const r = express.Router();
  r.get("/realtime", (req, res) => {
    res.setHeader("Upgrade", "websocket");
    res.status(426).json(errorBody(requestIdOf(req), 426, "UPGRADE_REQUIRED", "Open this path as a WebSocket with ?ticket=<ticket from POST /api/v1/realtime/ticket>"));
  });
  return r;
}

export const realtimeOpenApiPaths: ExtraPaths = {
  "/realtime": {
    get: {
      operationId: "realtime-connect",
      tags: ["Realtime"],
      summary: "Open the realtime WebSocket",
      description:
        "A WebSocket handshake (Connection: Upgrade, Upgrade: websocket) with a ticket from POST /api/v1/realtime/ticket. The ticket is " +
        "used up by the handshake; a used, expired or unknown ticket answers 401 without upgrading. Messages are JSON " +
        "{ type, channel, data, at } for events of the ticket holder's organization only; the server pings every 30 seconds.",
      parameters: [{ name: "ticket", in: "query", required: true, schema: { type: "string" } }],
      responses: {
        101: { description: "Switching protocols: the WebSocket is open" },
        401: { description: "Invalid, used or expired ticket" },
        426: errorResponse("A plain GET without the WebSocket upgrade"),
      },
    },
  },
};
