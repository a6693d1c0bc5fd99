// The front door: the one operation every device calls all the time (the heartbeat) answered
// in front of the app (`putInFront`), before express's router walks its stack.
// Profiles of the service under heartbeat load (docs/benchmarks.md, "Where the heartbeat time
// goes") showed express's router, helmet, body-parser, raw-body, parseurl and the request
// boundary's per-request URL parsing costing more CPU than authentication and the write.
//
// Nothing of what the heartbeat goes through is skipped; each step is the same function or
// gives the same result as on the ordinary path (src/app.ts):
// * the request id, its log line and metrics: the app's own `startRequest`;
// * the security headers: helmet's, computed once at start-up by running the app's helmet
//   middleware (they depend on nothing of the request), written with the request id, the
//   content type and length in one `writeHead`, so the answer leaves in one socket write;
// * CSRF: passes, as it does for every request with an Authorization header (the door takes
//   no other); CORS: a request with an Origin the service would answer takes the ordinary path;
// * the /api/v1 rate limiter: a source address it has blocked takes the ordinary path (429
//   there); a request with a credential spends no source budget there either;
// * ingest admission and lossy text fields: the door is not mounted for an operation that
//   declares either;
// * the request boundary (storable-input.ts): the path is exactly the operation's (nothing to
//   decode, no query string); the body is read here with the boundary's rules and checked by
//   the boundary's own `storableJsonBodyOf`;
// * the operation's handler and its error answers (`sendRestError`).
//
// What the door takes: POST to exactly the path, `Authorization` present, `Content-Type`
// application/json (optionally `; charset=utf-8`), a `Content-Length` from 1 to
// BODY_LIMIT_BYTES, no `Transfer-Encoding` or `Content-Encoding`. Anything else (no body, gzip,
// chunked, another charset, a query string, a trailing slash, an Origin when CORS is on, a
// blocked source) goes the ordinary way, where the same rules answer it.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Express, Request, Response } from "express";
import { TRPCError } from "@trpc/server";
import type { Services } from "../services.js";
import type { Meta } from "../trpc/init.js";
import { requestInfoOf, type RequestInfo } from "../trpc/context.js";
import { sourceBlocked } from "./rate-limit.js";
import { storableJsonBodyOf } from "./storable-input.js";
import { sendRestError } from "./error-response.js";
import proxyaddr from "proxy-addr";

/** What every request gets, from the app (src/app.ts). */
export interface FrontDoorCommon {
  /** the request id (`req.id`), the request's log line and metrics; returns the id for the header */
  startRequest(req: Request, res: Response): string;
  /** the security headers every answer carries (`headersSetBy(helmet(...))`) */
  securityHeaders: [string, string][];
  /** true when this request needs the ordinary path for another reason (a CORS origin) */
  ordinary(req: Request): boolean;
}

/** An operation the door answers: the 200 body, or a thrown error answered by `sendRestError`. */
export interface FrontDoorOperation {
  /** "/api/v1/agent/heartbeat" */
  path: string;
  /** the tRPC path its error bodies name ("agent.heartbeat") */
  procedure: string;
  meta: Meta | undefined;
  answer(req: Request, res: Response, request: RequestInfo, body: unknown): Promise<unknown>;
}

/** The headers a header-setting middleware (helmet) sets on every answer, by running it once. */
export function headersSetBy(middleware: (req: Request, res: Response, next: (err?: unknown) => void) => void): [string, string][] {
  const headers: [string, string][] = [];
  const res = {
    setHeader: (name: string, value: string | number | string[]) => void headers.push([name, String(value)]),
    removeHeader: () => undefined,
  };
  let called = false;
  middleware({ headers: {}, method: "GET", url: "/" } as Request, res as unknown as Response, () => void (called = true));
  if (!called) throw new Error("the security headers middleware did not answer synchronously");
  return headers;
}

const JSON_TYPES = new Set(["application/json", "application/json; charset=utf-8", "application/json;charset=utf-8"]);

/** The door for one operation: which requests it takes, and its answer to them. */
export interface FrontDoor {
  /** the request is one the door answers, by what node's parser gave (before express touched it) */
  fits(req: IncomingMessage): boolean;
  /** and nothing the app decides asks for the ordinary path (with express's request: `req.ip`) */
  admits(req: Request): boolean;
  answer(req: Request, res: Response): void;
}

/** The door for `operation`; null when the operation cannot take it (ingest admission, lossy text). */
export function frontDoor(services: Services, operation: FrontDoorOperation, common: FrontDoorCommon): FrontDoor | null {
  if (!operation.meta || operation.meta.ingest || operation.meta.lossyText?.length) return null;
  const limit = services.config.BODY_LIMIT_BYTES;
  const fixed = common.securityHeaders.flat();

  return {
    fits(req) {
      if (req.url !== operation.path || req.method !== "POST") return false;
      const h = req.headers;
      if (typeof h.authorization !== "string" || h["transfer-encoding"] !== undefined || h["content-encoding"] !== undefined) return false;
      const type = h["content-type"];
      if (type === undefined || !JSON_TYPES.has(type.toLowerCase())) return false;
      const length = h["content-length"];
      return length !== undefined && /^[1-9][0-9]{0,9}$/.test(length) && Number(length) <= limit;
    },
    admits: (req) => !common.ordinary(req) && !sourceBlocked(services, req),
    answer(req, res) {
      const id = common.startRequest(req, res);
      const request = requestInfoOf(req);
      // An error: the headers the ordinary path would have set so far, then its error answer.
      const fail = (err: unknown, procedure?: string) => {
        if (res.headersSent) return void res.destroy();
        res.setHeader("x-request-id", id);
        for (const [name, value] of common.securityHeaders) res.setHeader(name, value);
        sendRestError(services, res, request, err, procedure);
      };
      const chunks: Buffer[] = [];
      let ended = false;
      req.on("data", (chunk: Buffer) => void chunks.push(chunk));
      req.on("error", () => {
        if (ended) return;
        ended = true;
        fail(new TRPCError({ code: "BAD_REQUEST", message: "The request body ended before its announced length" }));
      });
      req.on("end", () => {
        if (ended) return;
        ended = true;
        let body: unknown;
        try {
          body = storableJsonBodyOf(req, chunks.length === 1 ? chunks[0] : Buffer.concat(chunks));
        } catch (err) {
          return fail(err);
        }
        operation.answer(req, res, request, body).then(
          (answer) => {
            const json = JSON.stringify(answer);
            res.writeHead(200, ["x-request-id", id, ...fixed, "content-type", "application/json", "content-length", String(Buffer.byteLength(json))]);
            res.end(json);
          },
          (err: unknown) => fail(err, operation.procedure),
        );
      });
    },
  };
}

type Handle = ((req: IncomingMessage, res: ServerResponse, callback?: unknown) => void) & { ordinary?: Handle };

/**
 * Puts the door in front of the app: the app's request handler (`app.handle`, which sets up
 * express's request and response and runs its router) answers whatever the door does not take.
 * The app's own handler stays reachable as `handle.ordinary`.
 *
 * What the door takes keeps node's own request and response: express would swap their
 * prototypes for its own (`Object.setPrototypeOf`), and on this path that swap and the slow
 * property lookups it leaves behind cost more CPU than authentication (a perf profile of the
 * heartbeat benchmark, docs/benchmarks.md). What the door's steps read of express's request is
 * set on the request itself, computed as express computes it: `req.ip` by proxy-addr with the
 * app's `trust proxy` function (TRUST_PROXY_HOPS), `req.originalUrl` and `req.baseUrl`. Every
 * answer, errors included, is written with node's own `writeHead` and `end`.
 */
export function putInFront(app: Express, door: FrontDoor): void {
  const express = app as unknown as { handle: Handle; enabled(setting: string): boolean; get(setting: string): unknown };
  const ordinary = express.handle;
  const handle: Handle = function frontDoor(this: unknown, req, res, callback) {
    if (!door.fits(req) || express.enabled("x-powered-by")) return ordinary.call(this, req, res, callback);
    const r = req as Request & { ip: string | undefined };
    r.ip = proxyaddr(req, express.get("trust proxy fn") as (address: string, hop: number) => boolean);
    r.originalUrl = req.url!;
    r.baseUrl = "";
    if (!door.admits(r)) return ordinary.call(this, req, res, callback);
    door.answer(r, res as Response);
  };
  handle.ordinary = ordinary;
  express.handle = handle;
}
