// POST /remote-sessions/run: one command on a device, answered whole (exit code, stdout and
// stderr) in the HTTP response, for clients that cannot hold a WebSocket: an MCP client, a
// script with curl, an automation. It is an exec session like any other (the same permission,
// policy, limits, offer, relay, audit and stored row); the service itself is the user's leg:
// it connects to its own stream URL with the session's one-use ticket, so the leg may land on
// any process behind the same address and the relay across processes carries it as it carries a
// person's. What comes back is bounded (RUN_OUTPUT_MAX_BYTES per stream, the rest counted and
// dropped while the command runs to its end), and so is the time (the device's own timeout of
// the command, then the session is closed).
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import WebSocket from "ws";
import { z } from "zod";
import type { Services } from "../../services.js";
import { CHANNEL, MAX_MESSAGE_BYTES } from "./relay.js";
import { remoteSignalsOf } from "./signals.js";

/** What the answer carries of each of stdout and stderr at most. */
export const RUN_OUTPUT_MAX_BYTES = 1024 * 1024;
/** How long the device may run the command at most, and the default. */
export const RUN_MAX_SECONDS = 300;
const RUN_DEFAULT_SECONDS = 60;
/** stdin sent with the command at most */
const RUN_STDIN_MAX_BYTES = 64 * 1024;

export const runInput = z.object({
  deviceId: z.string().uuid(),
  command: z.array(z.string().max(4096)).min(1, "the command's argv (at least one element)").max(256)
    .refine((argv) => argv[0] !== "", { message: "the program name must not be empty", path: [0] })
    .describe("the argv (no shell string): [\"sh\", \"-c\", \"...\"] for a shell's syntax"),
  stdin: z.string().max(RUN_STDIN_MAX_BYTES).optional().describe("given to the command's standard input, which is then closed (UTF-8, up to 64 KiB)"),
  timeoutSeconds: z.number().int().min(1).max(RUN_MAX_SECONDS).default(RUN_DEFAULT_SECONDS)
    .describe(`the device stops the command after this long (default ${RUN_DEFAULT_SECONDS}, at most ${RUN_MAX_SECONDS})`),
  reason: z.string().trim().max(500).optional().describe("why; required when the organization's settings say so"),
});

export const runOutput = z.object({
  exitCode: z.number().int().nullable().describe("the command's exit code (124 when the device stopped it at timeoutSeconds, as timeout(1) says); null when there is none (refused, the device left)"),
  stdout: z.string().describe("UTF-8, the first 1 MiB"),
  stderr: z.string().describe("UTF-8, the first 1 MiB"),
  stdoutBytes: z.number().int().describe("every byte the command wrote to stdout, also past what is answered"),
  stderrBytes: z.number().int(),
  truncated: z.boolean().describe("stdout or stderr was longer than what is answered"),
  timedOut: z.boolean().describe("the command was still running at timeoutSeconds and was stopped"),
  error: z.string().nullable().describe("why there is no exit code, in words (the device's refusal, the session's end)"),
});

export type RunResult = z.infer<typeof runOutput>;

/** The service's own HTTP server, where the run's leg connects (registered by attachRemoteSessions). */
const publicServers = new WeakMap<Services, Server>();

export function rememberPublicServer(services: Services, server: Server): void {
  publicServers.set(services, server);
}

function ownBaseUrl(services: Services): string {
  const address = publicServers.get(services)?.address() as AddressInfo | null | undefined;
  if (!address) throw new Error("the service's HTTP server is not listening");
  // every interface: the loopback reaches it
  const host = address.address === "0.0.0.0" || address.address === "::" ? "127.0.0.1" : address.address;
  return `ws://${host.includes(":") ? `[${host}]` : host}:${address.port}`;
}

/**
 * Joins the session's stream as the user, sends stdin and closes it, collects what comes back
 * until the stream ends; then waits for the session's end to be stored. `sessionId` is the
 * session `streamUrl` belongs to.
 */
export async function runToEnd(services: Services, sessionId: string, streamUrl: string, stdin: string | undefined, limitMs: number): Promise<RunResult> {
  const signals = remoteSignalsOf(services);
  let stop: () => void = () => undefined;
  const ended = new Promise<void>((resolve) => {
    stop = signals.onEnded((signal) => signal.sessionId === sessionId && resolve());
  });
  const out = { stdout: [] as Buffer[], stderr: [] as Buffer[], stdoutBytes: 0, stderrBytes: 0 };
  /** what the answer holds of each stream so far (at most RUN_OUTPUT_MAX_BYTES) */
  const kept = { stdout: 0, stderr: 0 };
  let exitCode: number | null = null;
  let error: string | null = null;
  let timedOut = false;
  let guardFired = false;
  try {
    await new Promise<void>((resolve) => {
      // zeros as the masking key: this process to itself, no browser and no proxy between (see agent/src/remote/leg.ts)
      const ws = new WebSocket(ownBaseUrl(services) + streamUrl, { maxPayload: MAX_MESSAGE_BYTES, perMessageDeflate: false, generateMask: (mask) => void mask.fill(0) });
      // the device stops the command at its timeout; past this the service gives up on the device
      const guard = setTimeout(() => {
        guardFired = true;
        timedOut = true;
        ws.close(1000, "timed out");
      }, limitMs);
      ws.on("open", () => {
        if (stdin) ws.send(Buffer.concat([Buffer.from([CHANNEL.stdin]), Buffer.from(stdin, "utf8")]));
        ws.send(Buffer.from([CHANNEL.close, CHANNEL.stdin]));
      });
      ws.on("message", (data: Buffer) => {
        const channel = data[0];
        const payload = data.subarray(1);
        if (channel === CHANNEL.stdout || channel === CHANNEL.stderr) {
          const stream = channel === CHANNEL.stdout ? "stdout" : "stderr";
          if (kept[stream] < RUN_OUTPUT_MAX_BYTES) {
            const part = payload.subarray(0, RUN_OUTPUT_MAX_BYTES - kept[stream]);
            out[stream].push(part);
            kept[stream] += part.length;
          }
          out[`${stream}Bytes`] += payload.length;
        } else if (channel === CHANNEL.status) {
          try {
            const status = JSON.parse(payload.toString("utf8")) as { exitCode?: unknown; error?: unknown; timedOut?: unknown };
            if (typeof status.exitCode === "number") exitCode = status.exitCode;
            if (status.timedOut === true) timedOut = true;
            if (typeof status.error === "string") error = status.error;
          } catch {
            // not JSON: nothing to read from it
          }
        }
      });
      ws.on("unexpected-response", (_req, res) => {
        error = `the stream was refused (${res.statusCode})`;
        res.resume();
      });
      ws.on("error", (err) => {
        error ??= `the stream failed: ${err.message}`;
      });
      ws.on("close", () => {
        clearTimeout(guard);
        resolve();
      });
    });
    // The relay stores the end as the legs close: the answer says what is stored.
    await Promise.race([ended, new Promise((resolve) => setTimeout(resolve, 5000).unref())]);
  } finally {
    stop();
  }
  if (guardFired && error === null) error = `no end from the device after ${Math.round(limitMs / 1000)} s; the session was closed`;
  const text = (parts: Buffer[]) => Buffer.concat(parts).toString("utf8");
  return {
    exitCode, stdout: text(out.stdout), stderr: text(out.stderr), stdoutBytes: out.stdoutBytes, stderrBytes: out.stderrBytes,
    truncated: out.stdoutBytes > RUN_OUTPUT_MAX_BYTES || out.stderrBytes > RUN_OUTPUT_MAX_BYTES, timedOut, error: exitCode === null ? error : null,
  };
}
