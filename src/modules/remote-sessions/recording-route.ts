// GET /api/v1/remote-sessions/{id}/recording: a recorded shell session as asciicast v2
// (application/x-asciicast), for playback (asciinema-player, the console). A plain route
// (procedures answer JSON only) behind the procedures' gate (remote:read, audited refusals).
import express, { type Router } from "express";
import { z } from "zod";
import type { Services } from "../../services.js";
import { TRPCError } from "../../trpc/procedures.js";
import { guardedJsonRoute } from "../../http/guarded-route.js";
import { errorResponse, type ExtraPaths } from "../../http/docs.js";
import { ASCIICAST_TYPE } from "./recording.js";

const PATH = "remoteSessions.recording";
const params = z.object({ id: z.string().uuid() });

export function remoteRecordingRoutes(services: Services): Router {
  const r = express.Router();
  r.get("/remote-sessions/:id/recording", guardedJsonRoute(services, { label: PATH, access: { permission: "remote:read" }, body: z.object({}) }, async ({ principal, req, res }) => {
    const { id } = params.parse(req.params);
    const session = await services.prisma.remoteSession.findFirst({
      where: { id, organizationId: principal.organizationId },
      select: { recorded: true, endedAt: true, recording: { select: { truncated: true } } },
    });
    if (!session) throw new TRPCError({ code: "NOT_FOUND", message: "Remote session not found" });
    if (!session.recording) throw new TRPCError({ code: "NOT_FOUND", message: missingRecording(session) });
    res.setHeader("Content-Type", `${ASCIICAST_TYPE}; charset=utf-8`);
    res.setHeader("Content-Disposition", `inline; filename="remote-session-${id}.cast"`);
    res.setHeader("Cache-Control", "no-store");
    res.setHeader("X-Recording-Truncated", String(session.recording.truncated));
    const [row] = await services.database.opened.raw.query<{ data: string }>(
      `SELECT encode("data", 'base64') AS "data" FROM "RemoteSessionRecording" WHERE "sessionId" = $1::uuid`, [id]);
    res.send(Buffer.from(row?.data ?? "", "base64"));
  }));
  return r;
}

/** Why a session has no recording to play: never recorded, not stored yet, or past its retention. */
function missingRecording(session: { recorded: boolean; endedAt: Date | null }): string {
  if (!session.recorded) return "This session was not recorded (settings.remoteAccess.recordShell, shell sessions only)";
  // the recording is written as the stream's legs close, a moment after the session's end
  if (!session.endedAt || Date.now() - session.endedAt.getTime() < 60_000) return "The recording is stored when the session's stream ends";
  return "The recording was removed: recordings are kept settings.remoteAccess.recordingRetentionDays days";
}

export const remoteRecordingOpenApiPaths: ExtraPaths = {
  "/remote-sessions/{id}/recording": {
    get: {
      operationId: "remoteSessions-recording",
      tags: ["Remote access"],
      summary: "A recorded shell session as asciicast v2 (remote:read)",
      description: "Recorded when the organization's settings.remoteAccess.recordShell is on; past recordingMaxBytes the recording stops (X-Recording-Truncated: true), the session does not.",
      security: [{ ApiKey: [] }, { Bearer: [] }],
      parameters: [{ name: "id", in: "path", required: true, schema: { type: "string", format: "uuid" } }],
      responses: {
        200: { description: "The recording: a header line, then [seconds, \"o\" | \"r\" | \"m\", text] per line", content: { [ASCIICAST_TYPE]: { schema: { type: "string" } } } },
        401: errorResponse("Authentication missing or invalid"),
        403: errorResponse("Missing permission remote:read"),
        404: errorResponse("No such session in your organization, or no recording"),
      },
    },
  },
};
