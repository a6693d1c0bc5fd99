// A lean JSON-over-HTTP client on node:http with keep-alive: the simulator and the benchmarks
// open a bounded number of connections and reuse them (fetch would add its own overhead to
// what we measure). The device's typed tRPC client (service-client.ts) sends through it too.
import http from "node:http";
import https from "node:https";

export interface JsonResponse<T = unknown> {
  status: number;
  body: T;
  headers: http.IncomingHttpHeaders;
}

export class JsonClient {
  private readonly base: URL;
  private readonly agent: http.Agent;
  private readonly transport: typeof http | typeof https;

  constructor(baseUrl: string, maxSockets = 64, private readonly timeoutMs = 30_000) {
    this.base = new URL(baseUrl);
    this.transport = this.base.protocol === "https:" ? https : http;
    this.agent = new this.transport.Agent({ keepAlive: true, maxSockets });
  }

  request<T = unknown>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<JsonResponse<T>> {
    return this.send<T>(method, path, body === undefined ? undefined : JSON.stringify(body), headers);
  }

  /** A request whose body is JSON text already (tRPC's link serializes its own); the answer parsed when it is JSON. */
  send<T = unknown>(method: string, path: string, json: string | undefined, headers: Record<string, string> = {}): Promise<JsonResponse<T>> {
    return this.upload<T>(method, path, json === undefined ? undefined : Buffer.from(json), "application/json", headers);
  }

  /** A request with a body of any type (a device action's tar.gz); the answer parsed when it is JSON. */
  upload<T = unknown>(method: string, path: string, payload: Buffer | undefined, contentType: string, headers: Record<string, string> = {}): Promise<JsonResponse<T>> {
    return this.attempt<T>(method, path, payload, contentType, headers).catch((error: Error & { reusedSocket?: boolean; code?: string }) => {
      // A kept-alive connection the server closed while it was idle, in the moment it was
      // reused: the request never reached the server (Node's documented case for a retry,
      // request.reusedSocket). Asked once more on a fresh connection; anything else is the
      // caller's (an outage, a timeout).
      // Not when this client was closed meanwhile: that reset is the caller's own (a held wait let go).
      if (error.reusedSocket && (error.code === "ECONNRESET" || error.code === "EPIPE") && !this.closed) return this.attempt<T>(method, path, payload, contentType, headers);
      throw error;
    });
  }

  private attempt<T>(method: string, path: string, payload: Buffer | undefined, contentType: string, headers: Record<string, string>): Promise<JsonResponse<T>> {
    const url = new URL(path, this.base);
    return new Promise((resolve, reject) => {
      const req = this.transport.request(
        url,
        {
          method,
          agent: this.agent,
          timeout: this.timeoutMs,
          headers: {
            accept: "application/json",
            ...(payload ? { "content-type": contentType, "content-length": String(payload.length) } : {}),
            ...headers,
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (c: Buffer) => chunks.push(c));
          res.on("end", () => {
            const text = Buffer.concat(chunks).toString("utf8");
            let parsed: unknown = text;
            try {
              parsed = text ? JSON.parse(text) : undefined;
            } catch {
              /* not JSON: keep the text */
            }
            resolve({ status: res.statusCode ?? 0, body: parsed as T, headers: res.headers });
          });
          res.on("error", reject);
        },
      );
      req.on("timeout", () => req.destroy(new Error(`request timed out after ${this.timeoutMs} ms`)));
      req.on("error", (error: Error & { reusedSocket?: boolean }) => {
        error.reusedSocket = req.reusedSocket;
        reject(error);
      });
      req.end(payload);
    });
  }

  private closed = false;

  close() {
    this.closed = true;
    this.agent.destroy();
  }
}
