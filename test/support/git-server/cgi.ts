/**
 * A minimal CGI/1.1 gateway (RFC 3875) for one program, enough for `git http-backend`:
 * request line and headers become environment variables, the body goes to stdin, and the
 * program's "Status:"/header block is turned back into the HTTP response.
 */
import { spawn } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import type { IncomingMessage, ServerResponse } from "node:http";

export interface CgiOptions {
  program: string;
  /** Base environment (PATH, HOME, program-specific variables). */
  env: NodeJS.ProcessEnv;
  /** Set when the gateway authenticated the caller. */
  remoteUser?: string;
  /** Children still running, so that the server can stop them on close. */
  running: Set<ChildProcess>;
}

export async function serveCgi(request: IncomingMessage, response: ServerResponse, options: CgiOptions): Promise<void> {
  // Read the whole body first: test repositories are small, and a known CONTENT_LENGTH spares
  // the program from relying on end-of-file (chunked requests carry no Content-Length).
  const body = await readBody(request);
  const child = spawn(options.program, [], {
    env: { ...options.env, ...requestEnv(request, body.length, options.remoteUser) },
    stdio: ["pipe", "pipe", "pipe"],
  });
  options.running.add(child);

  const stderr: Buffer[] = [];
  child.stderr.on("data", (chunk: Buffer) => stderr.push(chunk));
  child.stdin.on("error", () => {}); // the program may exit before reading all of stdin
  child.stdin.end(body);

  await new Promise<void>((resolve) => {
    let headersDone = false;
    let pending = Buffer.alloc(0);

    child.stdout.on("data", (chunk: Buffer) => {
      if (headersDone) {
        response.write(chunk);
        return;
      }
      pending = Buffer.concat([pending, chunk]);
      const split = findHeaderEnd(pending);
      if (!split) return;
      writeCgiHeaders(response, pending.subarray(0, split.headerEnd).toString("latin1"));
      headersDone = true;
      response.write(pending.subarray(split.bodyStart));
    });

    child.on("error", (error) => {
      if (!response.headersSent) response.writeHead(500, { "Content-Type": "text/plain" });
      response.end(`CGI program failed to start: ${error.message}\n`);
    });

    child.on("close", (code) => {
      options.running.delete(child);
      if (!headersDone && !response.writableEnded) {
        const detail = Buffer.concat(stderr).toString("utf8").trim();
        response.writeHead(502, { "Content-Type": "text/plain" });
        response.end(`CGI program exited (${String(code)}) without a response: ${detail}\n`);
      } else if (!response.writableEnded) {
        response.end();
      }
      resolve();
    });
  });
}

function requestEnv(request: IncomingMessage, contentLength: number, remoteUser?: string): NodeJS.ProcessEnv {
  const url = new URL(request.url ?? "/", "http://127.0.0.1");
  const env: NodeJS.ProcessEnv = {
    GATEWAY_INTERFACE: "CGI/1.1",
    SERVER_PROTOCOL: `HTTP/${request.httpVersion}`,
    SERVER_SOFTWARE: "fleet-test-git-server",
    REQUEST_METHOD: request.method ?? "GET",
    SCRIPT_NAME: "",
    PATH_INFO: decodeURIComponent(url.pathname),
    QUERY_STRING: url.search.slice(1),
    REMOTE_ADDR: request.socket.remoteAddress ?? "127.0.0.1",
    CONTENT_LENGTH: String(contentLength),
  };
  if (request.headers["content-type"]) env.CONTENT_TYPE = request.headers["content-type"];
  if (remoteUser !== undefined) {
    env.REMOTE_USER = remoteUser;
    env.AUTH_TYPE = "Basic";
  }
  // HTTP_<NAME> for every header: http-backend reads HTTP_CONTENT_ENCODING (gzip bodies)
  // and HTTP_GIT_PROTOCOL (protocol v2) from here.
  for (const [name, value] of Object.entries(request.headers)) {
    if (value === undefined || name === "authorization") continue;
    env[`HTTP_${name.toUpperCase().replace(/-/g, "_")}`] = Array.isArray(value) ? value.join(", ") : value;
  }
  return env;
}

function findHeaderEnd(buffer: Buffer): { headerEnd: number; bodyStart: number } | undefined {
  const crlf = buffer.indexOf("\r\n\r\n");
  const lf = buffer.indexOf("\n\n");
  if (crlf >= 0 && (lf < 0 || crlf < lf)) return { headerEnd: crlf, bodyStart: crlf + 4 };
  if (lf >= 0) return { headerEnd: lf, bodyStart: lf + 2 };
  return undefined;
}

/** "Status: 404 Not Found" sets the status line; every other line is a response header. */
function writeCgiHeaders(response: ServerResponse, block: string): void {
  let status = 200;
  let reason: string | undefined;
  for (const line of block.split(/\r?\n/)) {
    const colon = line.indexOf(":");
    if (colon <= 0) continue;
    const name = line.slice(0, colon).trim();
    const value = line.slice(colon + 1).trim();
    if (name.toLowerCase() === "status") {
      const match = /^(\d{3})\s*(.*)$/.exec(value);
      if (match) {
        status = Number(match[1]);
        reason = match[2] || undefined;
      }
      continue;
    }
    const previous = response.getHeader(name);
    if (previous === undefined) response.setHeader(name, value);
    else response.setHeader(name, [...(Array.isArray(previous) ? previous : [String(previous)]), value]);
  }
  if (reason === undefined) response.writeHead(status);
  else response.writeHead(status, reason);
}

function readBody(request: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => resolve(Buffer.concat(chunks)));
    request.on("error", reject);
  });
}
