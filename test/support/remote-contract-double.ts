// A service and a device in one small loopback server that speak remote access's contract
// (docs/remote-access.md), for the CLI's tests of the stream side: POST /api/v1/remote-sessions
// and its tickets, get and close, device lookup by name, and the user leg's WebSocket framed by
// channel. The "device" behind it is this machine: exec runs the argv, shell runs sh under a
// pty (util-linux script), port-forward connects to the target on loopback, file-read and
// file-write use the file system. It keeps what it was sent (resizes, reasons) for assertions.
// The real service and agent are tested against the CLI in test/cli/remote-service.test.ts.
import { spawn, type ChildProcess } from "node:child_process";
import { createHash, randomUUID } from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import net from "node:net";
import { WebSocketServer, type WebSocket } from "ws";

export const CHANNEL = { stdin: 0, stdout: 1, stderr: 2, status: 3, resize: 4, close: 255 } as const;

export interface DoubleSession {
  id: string;
  deviceId: string;
  kind: string;
  reason: string | null;
  command: string[] | null;
  tty: boolean;
  target: { host: string; port: number } | null;
  path: string | null;
  size?: number;
  mode?: number;
  sha256?: string;
  state: "pending" | "active" | "ended";
  endReason: string | null;
  endMessage?: string;
  exitCode: number | null;
  resizes: Array<{ cols: number; rows: number }>;
  tickets: Set<string>;
  streams: number;
}

export interface DoubleOptions {
  apiKey: string;
  devices: Array<{ id: string; name: string; status: "online" | "offline" }>;
  /** an API key that is signed in but lacks every remote permission */
  keyWithoutPermission?: string;
  remoteAccess?: boolean;
  /** the device refuses every session before the user's leg connects (its configuration says no), with this reason */
  refuseBeforeJoin?: string;
  /** paths the device refuses to read or write (its allowed roots, inverted) */
  refusedPrefix?: string;
  /** file-read announces a SHA-256 the bytes do not have (a copy damaged on the way) */
  tamperReads?: boolean;
}

export interface ContractDouble {
  url: string;
  sessions: Map<string, DoubleSession>;
  options: DoubleOptions;
  /** an administrator's force-close: the session ends and its streams close */
  forceClose(id: string): void;
  close(): Promise<void>;
}

const frame = (channel: number, payload: Buffer | string = Buffer.alloc(0)) =>
  Buffer.concat([Buffer.from([channel]), typeof payload === "string" ? Buffer.from(payload) : payload]);
const json = (res: http.ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
};

export async function startContractDouble(options: DoubleOptions): Promise<ContractDouble> {
  const sessions = new Map<string, DoubleSession>();
  const byTicket = new Map<string, DoubleSession>();
  const newTicket = (session: DoubleSession) => {
    const ticket = randomUUID();
    session.tickets.add(ticket);
    byTicket.set(ticket, session);
    return { ticket, streamUrl: `/api/v1/remote-sessions/${session.id}/stream?ticket=${ticket}` };
  };

  const server = http.createServer(async (req, res) => {
    const url = new URL(req.url ?? "/", "http://x");
    const key = req.headers["x-api-key"];
    if (key !== options.apiKey && key !== options.keyWithoutPermission) return json(res, 401, { message: "not signed in", code: "UNAUTHORIZED" });
    let body: Record<string, any> = {};
    const text = await new Promise<string>((resolve) => {
      let t = "";
      req.on("data", (c: Buffer) => (t += c.toString()));
      req.on("end", () => resolve(t));
    });
    if (text) body = JSON.parse(text);
    const parts = url.pathname.split("/").filter(Boolean); // api v1 ...
    if (req.method === "GET" && url.pathname === "/api/v1/devices") {
      const search = url.searchParams.get("search") ?? "";
      return json(res, 200, { items: options.devices.filter((d) => d.name.includes(search)), total: 0, hasMore: false });
    }
    if (req.method === "POST" && url.pathname === "/api/v1/remote-sessions") {
      const device = options.devices.find((d) => d.id === body.deviceId);
      if (!device) return json(res, 404, { message: "device not found", code: "NOT_FOUND" });
      if (key === options.keyWithoutPermission) return json(res, 403, { message: `missing permission remote:${body.kind === "exec" ? "exec" : body.kind}`, code: "FORBIDDEN" });
      if (options.remoteAccess === false) return json(res, 409, { message: "remote access is off for this organization", code: "CONFLICT" });
      if (device.status === "offline") return json(res, 409, { message: "the device is offline (last seen 2026-12-07T10:00:00.000Z)", code: "CONFLICT" });
      if (body.kind === "exec" && (!Array.isArray(body.command) || body.command.length === 0)) {
        return json(res, 400, { message: "Invalid input", code: "BAD_REQUEST", issues: [{ path: ["command"], message: "argv must not be empty" }] });
      }
      const session: DoubleSession = {
        id: randomUUID(), deviceId: device.id, kind: body.kind, reason: body.reason ?? null, command: body.command ?? null, tty: !!body.tty,
        target: body.kind === "port-forward" ? { host: body.target?.host ?? "127.0.0.1", port: body.target?.port } : null,
        path: body.path ?? null, size: body.size, mode: body.mode, sha256: body.sha256,
        state: "pending", endReason: null, exitCode: null, resizes: body.cols ? [{ cols: body.cols, rows: body.rows }] : [], tickets: new Set(), streams: 0,
      };
      sessions.set(session.id, session);
      if (options.refuseBeforeJoin) end(session, "device-refused", null, options.refuseBeforeJoin);
      return json(res, 201, { session: view(session), ...newTicket(session) });
    }
    const session = parts[2] === "remote-sessions" ? sessions.get(parts[3]) : undefined;
    if (!session) return json(res, 404, { message: "not found", code: "NOT_FOUND" });
    if (req.method === "GET" && parts.length === 4) return json(res, 200, view(session));
    if (req.method === "POST" && parts[4] === "tickets") {
      if (session.state === "ended") return json(res, 409, { message: "the session has ended", code: "CONFLICT" });
      return json(res, 201, newTicket(session));
    }
    if (req.method === "POST" && parts[4] === "close") {
      end(session, "closed-by-user");
      return json(res, 200, view(session));
    }
    json(res, 404, { message: "not found", code: "NOT_FOUND" });
  });

  const wss = new WebSocketServer({ noServer: true, perMessageDeflate: false });
  const streamsOf = new Map<WebSocket, string>();
  server.on("upgrade", (req, socket, head) => {
    const url = new URL(req.url ?? "/", "http://x");
    const ticket = url.searchParams.get("ticket") ?? "";
    const session = byTicket.get(ticket);
    if (!session || !session.tickets.delete(ticket) || session.state === "ended") {
      socket.end("HTTP/1.1 401 Unauthorized\r\ncontent-type: application/json\r\n\r\n{\"message\":\"the ticket is unknown, used or expired\"}");
      return;
    }
    byTicket.delete(ticket);
    wss.handleUpgrade(req, socket, head, (ws) => {
      streamsOf.set(ws, session.id);
      session.state = "active";
      session.streams++;
      serve(session, ws, options);
    });
  });

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    sessions,
    options,
    forceClose: (id) => {
      end(sessions.get(id)!, "force-closed");
      for (const [ws, sessionId] of streamsOf) if (sessionId === id) ws.close(1000, "force-closed");
    },
    close: () => new Promise<void>((resolve) => {
      for (const ws of wss.clients) ws.terminate();
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

function view(s: DoubleSession) {
  return { id: s.id, deviceId: s.deviceId, kind: s.kind, reason: s.reason, state: s.state, endReason: s.endReason, endMessage: s.endMessage ?? null, exitCode: s.exitCode };
}

function end(session: DoubleSession, reason: string, exitCode: number | null = null, message?: string) {
  if (session.state === "ended") return;
  session.state = "ended";
  session.endReason = reason;
  session.endMessage = message;
  if (exitCode !== null) session.exitCode = exitCode;
}

/** The device's side of one stream. */
function serve(session: DoubleSession, ws: WebSocket, options: DoubleOptions) {
  const status = (value: unknown) => ws.send(frame(CHANNEL.status, JSON.stringify(value)));
  const refuse = (reason: string) => {
    status({ error: reason });
    end(session, "device-refused");
    ws.close(1000, "device-refused");
  };
  /** sends with the relay's watermarks: `source` pauses while the socket holds over 1 MiB */
  const sendFrom = (source: { pause(): void; resume(): void }, channel: number, chunk: Buffer) => {
    ws.send(frame(channel, chunk));
    if (ws.bufferedAmount > 1024 * 1024) {
      source.pause();
      const wait = setInterval(() => {
        if (ws.bufferedAmount < 256 * 1024 || ws.readyState !== ws.OPEN) {
          clearInterval(wait);
          source.resume();
        }
      }, 5);
    }
  };
  const refusedPath = (p: string | null) => !p || (options.refusedPrefix ? p.startsWith(options.refusedPrefix) : false);

  if (session.kind === "exec" || session.kind === "shell") {
    // a shell's Ctrl-C must reach what runs in it: the test runner's workers ignore SIGINT, which
    // children inherit, so the shell starts with the default disposition again (perl, in Debian's base)
    const argv = session.kind === "shell" ? ["perl", "-e", '$SIG{INT}="DEFAULT"; exec @ARGV', "script", "-qfec", "sh", "/dev/null"] : session.command!;
    let child: ChildProcess;
    try {
      child = spawn(argv[0], argv.slice(1), { stdio: ["pipe", "pipe", "pipe"], env: { ...process.env, PS1: "$ ", TERM: "xterm" } });
    } catch {
      status({ exitCode: 127 });
      end(session, "completed", 127);
      ws.close(1000);
      return;
    }
    child.on("error", () => {
      status({ exitCode: 127 });
      end(session, "completed", 127);
      ws.close(1000);
    });
    child.stdout!.on("data", (c: Buffer) => sendFrom(child.stdout!, CHANNEL.stdout, c));
    child.stderr!.on("data", (c: Buffer) => sendFrom(child.stderr!, CHANNEL.stderr, c));
    child.on("close", (code, signal) => {
      const exitCode = code ?? (signal ? 128 + (signal === "SIGKILL" ? 9 : 15) : 1);
      status({ exitCode });
      end(session, "completed", exitCode);
      ws.close(1000, "completed");
    });
    ws.on("message", (data: Buffer) => {
      if (data[0] === CHANNEL.stdin && !child.stdin!.write(data.subarray(1))) {
        ws.pause();
        child.stdin!.once("drain", () => ws.resume());
      } else if (data[0] === CHANNEL.close && data[1] === CHANNEL.stdin) child.stdin!.end();
      else if (data[0] === CHANNEL.resize) session.resizes.push(JSON.parse(data.subarray(1).toString()));
    });
    child.stdin!.on("error", () => undefined);
    ws.on("close", () => {
      if (child.exitCode === null) child.kill("SIGKILL");
      end(session, "closed-by-user");
    });
    return;
  }

  if (session.kind === "port-forward") {
    const socket = net.connect(session.target!.port, session.target!.host);
    socket.pause();
    ws.pause();
    socket.once("connect", () => {
      socket.resume();
      ws.resume();
    });
    socket.on("data", (c: Buffer) => sendFrom(socket, CHANNEL.stdout, c));
    socket.on("end", () => ws.send(Buffer.from([CHANNEL.close, CHANNEL.stdout])));
    socket.on("error", (err) => status({ error: `cannot connect to ${session.target!.host}:${session.target!.port}: ${(err as NodeJS.ErrnoException).code}` }));
    socket.on("close", () => ws.close(1000));
    ws.on("message", (data: Buffer) => {
      if (data[0] === CHANNEL.stdin && !socket.write(data.subarray(1))) {
        ws.pause();
        socket.once("drain", () => ws.resume());
      } else if (data[0] === CHANNEL.close && data[1] === CHANNEL.stdin) socket.end();
    });
    ws.on("close", () => socket.destroy());
    return;
  }

  if (session.kind === "file-read") {
    if (refusedPath(session.path)) return refuse(`${session.path} is outside the allowed roots (${options.refusedPrefix ? `not under ${options.refusedPrefix}` : "none"})`);
    let stat: fs.Stats;
    try {
      stat = fs.statSync(session.path!);
    } catch (err) {
      return refuse(`cannot read ${session.path}: ${(err as NodeJS.ErrnoException).code}`);
    }
    status({ size: stat.size, mode: stat.mode & 0o7777 });
    const hash = createHash("sha256");
    const file = fs.createReadStream(session.path!, { highWaterMark: 256 * 1024 });
    file.on("data", (c) => {
      hash.update(c as Buffer);
      sendFrom(file, CHANNEL.stdout, c as Buffer);
    });
    file.on("end", () => {
      status({ sha256: options.tamperReads ? "0".repeat(64) : hash.digest("hex") });
      end(session, "completed");
      ws.close(1000, "completed");
    });
    return;
  }

  if (session.kind === "file-write") {
    if (refusedPath(session.path)) return refuse(`${session.path} is outside the allowed roots (${options.refusedPrefix ? `not under ${options.refusedPrefix}` : "none"})`);
    const temp = `${session.path}.part`;
    const out = fs.createWriteStream(temp, { mode: session.mode ?? 0o644 });
    const hash = createHash("sha256");
    let size = 0;
    ws.on("message", (data: Buffer) => {
      if (data[0] === CHANNEL.stdin) {
        size += data.length - 1;
        hash.update(data.subarray(1));
        if (!out.write(data.subarray(1))) {
          ws.pause();
          out.once("drain", () => ws.resume());
        }
      } else if (data[0] === CHANNEL.close && data[1] === CHANNEL.stdin) {
        ws.resume(); // the last write's drain may never come once the file ends: the closing handshake must be read
        out.end(() => {
          const sha256 = hash.digest("hex");
          if (sha256 === session.sha256 && size === session.size) {
            fs.chmodSync(temp, (session.mode ?? 0o644) & 0o7777);
            fs.renameSync(temp, session.path!);
          } else fs.rmSync(temp, { force: true });
          status({ size, sha256 });
          end(session, "completed");
          ws.close(1000, "completed");
        });
      }
    });
    return;
  }
  refuse(`unknown kind ${session.kind}`);
}
