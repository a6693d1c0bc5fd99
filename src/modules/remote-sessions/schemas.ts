// The remote session resource as the API writes it, and the inputs of its operations
// (docs/remote-access.md, "Session").
import { z } from "zod";
import type { RemoteSession } from "../../generated/prisma/client.js";
import { pagingInput } from "../../lib/paging.js";

export const REMOTE_KINDS = ["shell", "exec", "port-forward", "file-read", "file-write"] as const;
export type RemoteKind = (typeof REMOTE_KINDS)[number];
export const REMOTE_STATES = ["pending", "active", "ended"] as const;
export const END_REASONS = [
  "completed", "closed-by-user", "force-closed", "idle-timeout", "max-duration", "device-never-joined", "device-refused",
  "device-disconnected", "certificate-revoked", "user-signed-out", "service-stopped",
] as const;
export type EndReason = (typeof END_REASONS)[number];

/** The permission each kind needs (granted only when named: src/trpc/permissions.ts). */
export const KIND_PERMISSION = {
  shell: "remote:shell",
  exec: "remote:exec",
  "port-forward": "remote:port-forward",
  "file-read": "remote:files-read",
  "file-write": "remote:files-write",
} as const satisfies Record<RemoteKind, string>;

const target = z.object({
  host: z.string().trim().min(1).max(253).regex(/^[A-Za-z0-9.:_-]+$/, "a host name or an IP address").default("127.0.0.1"),
  port: z.number().int().min(1, "a port from 1 to 65535").max(65535, "a port from 1 to 65535"),
});

export const openInput = z
  .object({
    deviceId: z.string().uuid(),
    kind: z.enum(REMOTE_KINDS),
    reason: z.string().trim().max(500).optional().describe("why; required when the organization's settings say so"),
    command: z.array(z.string().max(4096)).max(256).optional().describe("exec: the argv (no shell string); shell: a login shell when absent"),
    tty: z.boolean().optional().describe("a pty (default: true for shell, false for exec)"),
    cols: z.number().int().min(1).max(1000).optional(),
    rows: z.number().int().min(1).max(1000).optional(),
    timeoutSeconds: z.number().int().min(1).max(86_400).optional().describe("exec: the device stops the command after this long"),
    target: target.optional().describe("port-forward: where the device connects (host defaults to 127.0.0.1)"),
    path: z.string().min(1).max(4096).optional().describe("file-read, file-write: the absolute path on the device"),
    size: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).optional().describe("file-write: the file's size in bytes"),
    mode: z.number().int().min(0).max(0o7777).optional().describe("file-write: the file's mode (e.g. 420 = 0644)"),
    sha256: z.string().regex(/^[0-9a-f]{64}$/, "64 lower-case hexadecimal digits").optional().describe("file-write: checked by the device at the end"),
  })
  .superRefine((input, ctx) => {
    const need = (field: keyof typeof input, message: string) => {
      if (input[field] === undefined) ctx.addIssue({ code: "custom", path: [field], message });
    };
    if (input.kind === "exec") {
      if (!input.command?.length) ctx.addIssue({ code: "custom", path: ["command"], message: "exec needs the command's argv (at least one element)" });
      else if (!input.command[0]) ctx.addIssue({ code: "custom", path: ["command", "0"], message: "the program name must not be empty" });
    }
    if (input.kind === "port-forward") need("target", "port-forward needs target { host?, port }");
    if (input.kind === "file-read" || input.kind === "file-write") {
      need("path", `${input.kind} needs the path on the device`);
      if (input.path !== undefined && !input.path.startsWith("/")) ctx.addIssue({ code: "custom", path: ["path"], message: "an absolute path (starting with /)" });
    }
    if (input.kind === "file-write") need("size", "file-write needs the size in bytes");
  });
export type OpenInput = z.infer<typeof openInput>;

export const listInput = z.object({
  ...pagingInput,
  deviceId: z.string().uuid().optional(),
  userId: z.string().uuid().optional(),
  state: z.enum(REMOTE_STATES).optional(),
  kind: z.enum(REMOTE_KINDS).optional(),
});

export const idInput = z.object({ id: z.string().uuid() });

/** What the device is asked to run, connect or copy: the same in the session and in its offer. */
const whatToRun = {
  command: z.array(z.string()),
  tty: z.boolean(),
  cols: z.number().int().nullable(),
  rows: z.number().int().nullable(),
  timeoutSeconds: z.number().int().nullable(),
  target: z.object({ host: z.string(), port: z.number().int() }).nullable(),
  path: z.string().nullable(),
  size: z.number().int().nullable(),
  mode: z.number().int().nullable(),
};

export const remoteSessionOutput = z.object({
  id: z.string().uuid(),
  organizationId: z.string().uuid(),
  deviceId: z.string().uuid(),
  userId: z.string().uuid(),
  apiKeyId: z.string().uuid().nullable(),
  kind: z.enum(REMOTE_KINDS),
  reason: z.string().nullable(),
  state: z.enum(REMOTE_STATES),
  ...whatToRun,
  createdAt: z.string().datetime(),
  startedAt: z.string().datetime().nullable(),
  endedAt: z.string().datetime().nullable(),
  endReason: z.string().nullable(),
  endMessage: z.string().nullable().describe("why, in words, when endReason is not all (the device's refusal names its rule)"),
  joinDeadline: z.string().datetime().describe("the device must join by then, or the session ends device-never-joined"),
  expiresAt: z.string().datetime().describe("the absolute end (the organization's maxDurationSeconds)"),
  bytesToDevice: z.number().int(),
  bytesFromDevice: z.number().int(),
  exitCode: z.number().int().nullable(),
  recorded: z.boolean(),
});
export type RemoteSessionDto = z.infer<typeof remoteSessionOutput>;

const iso = (d: Date | null) => d?.toISOString() ?? null;

export function toRemoteSessionDto(s: RemoteSession): RemoteSessionDto {
  const t = s.target as { host?: unknown; port?: unknown } | null;
  return {
    id: s.id,
    organizationId: s.organizationId,
    deviceId: s.deviceId,
    userId: s.userId,
    apiKeyId: s.apiKeyId,
    kind: s.kind as RemoteKind,
    reason: s.reason,
    state: s.state as RemoteSessionDto["state"],
    command: s.command,
    tty: s.tty,
    cols: s.cols,
    rows: s.rows,
    timeoutSeconds: s.timeoutSeconds,
    target: t && typeof t.host === "string" && typeof t.port === "number" ? { host: t.host, port: t.port } : null,
    path: s.path,
    size: s.size === null ? null : Number(s.size),
    mode: s.mode,
    createdAt: s.createdAt.toISOString(),
    startedAt: iso(s.startedAt),
    endedAt: iso(s.endedAt),
    endReason: s.endReason,
    endMessage: s.endMessage,
    joinDeadline: s.joinDeadline.toISOString(),
    expiresAt: s.expiresAt.toISOString(),
    bytesToDevice: Number(s.bytesToDevice),
    bytesFromDevice: Number(s.bytesFromDevice),
    exitCode: s.exitCode,
    recorded: s.recorded,
  };
}

export const connectOutput = z.object({
  connectionId: z.string().uuid(),
  ticket: z.string().describe("one-use, valid 30 seconds"),
  ticketExpiresAt: z.string().datetime(),
  streamUrl: z.string().describe("/api/v1/remote-sessions/{id}/stream?ticket=...: open it with a WebSocket upgrade"),
});

export const openOutput = connectOutput.extend({ session: remoteSessionOutput });

/** What the device is offered (docs/remote-access.md, "Device side"). */
export const offerOutput = z.object({
  sessionId: z.string().uuid(),
  connectionId: z.string().uuid(),
  kind: z.enum(REMOTE_KINDS),
  token: z.string().describe("one-use token of the device's leg: GET /api/v1/agent/remote-sessions/{sessionId}/stream?token=..."),
  streamUrl: z.string(),
  expiresAt: z.string().datetime(),
  ...whatToRun,
  sha256: z.string().nullable(),
  user: z.object({ id: z.string().uuid(), email: z.string().nullable(), name: z.string().nullable() }),
  reason: z.string().nullable(),
});
export type Offer = z.infer<typeof offerOutput>;
