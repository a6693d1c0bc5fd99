// The device's calls to the service through the typed tRPC client (`@trpc/client`, typed on the
// service's router: `import type { AppRouter }`, erased at build, so the device bundle holds
// none of the service's code). Enrollment, certificate renewal, a component's package and the
// telemetry and log batches go to /trpc/<procedure>; the heartbeat keeps its lean REST route
// (session.ts says why).
//
// The client's terminating link is our own (`deviceLink`): one request per call, as tRPC's
// httpLink sends it (a mutation POSTs its input as JSON, a query GETs it in `?input=`), on the
// session's JsonClient (node:http, keep-alive): the same few sockets as the heartbeat. Not
// httpLink itself: it looks at the global FormData for every call, and that getter loads Node's
// whole fetch implementation (undici), 2.6 MB more resident memory on an idle device
// (docs/benchmarks.md, "The fleet agent on Podman").
//
// Every answer comes back as the REST calls' did, `{ status, body, headers }` with the HTTP
// status the service answered: a refusal keeps its status (401, 403, 409, 429, 503, ...), its
// Retry-After and its message, whether tRPC wrote it or something in front of it did (the rate
// limiter's 429, a proxy's 502 page); an answer that never came is thrown, as the REST calls
// threw it.
import { createTRPCClient, TRPCClientError, type TRPCClient, type TRPCLink } from "@trpc/client";
import { observable } from "@trpc/server/observable";
import type { inferRouterInputs, inferRouterOutputs } from "@trpc/server";
import type { AppRouter } from "../../../src/trpc/router.js";
import type { JsonClient, JsonResponse } from "./json-client.js";

export type ServiceInputs = inferRouterInputs<AppRouter>;
export type ServiceOutputs = inferRouterOutputs<AppRouter>;
export type { AppRouter };

/** What a device call's failure is answered with, as the REST facade's error bodies are shaped. */
export interface ErrorAnswer {
  code?: string;
  message?: string;
  data?: { code?: string; httpStatus?: number; requestId?: string };
}

/** The procedure call's per-request options: the device token, when the call needs one. */
interface CallContext extends Record<string, unknown> {
  authorization?: string;
}

/** -32603: JSON-RPC's internal error; only its presence matters to tRPC's client (the HTTP status is what we keep). */
const UNKNOWN_ERROR_CODE = -32603;

type Envelope = { result: { data: unknown } } | { error: { message: string; code: number; data?: ErrorAnswer["data"] } };

/**
 * A tRPC answer as tRPC wrote it, or a JSON-RPC error envelope around anything else (the rate
 * limiter's REST-shaped 429 at the door, a reverse proxy's HTML page).
 */
function envelope(status: number, body: unknown): Envelope {
  if (body && typeof body === "object" && ("result" in body || "error" in body)) return body as Envelope;
  const rest = body && typeof body === "object" ? (body as ErrorAnswer) : undefined;
  const text = typeof body === "string" ? body.trim().slice(0, 200) : "";
  return {
    error: {
      message: rest?.message ?? (text || `HTTP ${status}`),
      code: UNKNOWN_ERROR_CODE,
      data: { code: rest?.code ?? rest?.data?.code, httpStatus: status, requestId: rest?.data?.requestId },
    },
  };
}

/** The terminating link: each call one request on the JsonClient; a refusal's error keeps the response in its `meta`. */
function deviceLink(http: JsonClient): TRPCLink<AppRouter> {
  return () => ({ op }) => observable((observer) => {
    const { authorization } = op.context as CallContext;
    const input = op.input === undefined ? undefined : JSON.stringify(op.input);
    const query = op.type === "query";
    const path = `/trpc/${op.path}${query && input !== undefined ? `?input=${encodeURIComponent(input)}` : ""}`;
    http.send(query ? "GET" : "POST", path, query ? undefined : input, authorization ? { authorization } : {}).then(
      (response) => {
        const answer = envelope(response.status, response.body);
        if ("error" in answer || response.status < 200 || response.status >= 300) {
          observer.error(TRPCClientError.from("error" in answer ? answer : envelope(response.status, undefined), { meta: { response } }));
          return;
        }
        observer.next({ result: { type: "data", data: answer.result.data } });
        observer.complete();
      },
      (cause: Error) => observer.error(TRPCClientError.from(cause)),
    );
  });
}

export class ServiceClient {
  /** the typed client: `trpc.agent.enroll.mutate(...)`, checked against the service's router at compile time */
  readonly trpc: TRPCClient<AppRouter>;

  constructor(http: JsonClient) {
    this.trpc = createTRPCClient<AppRouter>({ links: [deviceLink(http)] });
  }

  /** Per-request options of a procedure call: the device token (`Bearer ...`), when it needs one. */
  static as(authorization?: string): { context: CallContext } {
    return { context: authorization ? { authorization } : {} };
  }

  /**
   * The outcome of one procedure call as an HTTP answer: 200 and the procedure's output, or the
   * status, headers and message of the refusal. An answer that never came (connection refused,
   * reset, timed out) is thrown.
   */
  async answer<T>(call: () => Promise<T>): Promise<JsonResponse<T>> {
    try {
      return { status: 200, body: await call(), headers: {} };
    } catch (error) {
      const response = error instanceof TRPCClientError ? (error.meta?.response as JsonResponse | undefined) : undefined;
      if (!response) throw error instanceof TRPCClientError && error.cause instanceof Error ? error.cause : error;
      const data = (error as TRPCClientError<AppRouter>).data as ErrorAnswer["data"] | undefined;
      const body: ErrorAnswer = { code: data?.code, message: (error as Error).message, data };
      return { status: response.status, body: body as T, headers: response.headers };
    }
  }
}
