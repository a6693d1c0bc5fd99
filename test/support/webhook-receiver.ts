// A real webhook receiver on loopback: records every request (headers, raw body), checks
// X-Signature against a secret, and answers with scripted status codes (e.g. 500, 500, 200).
import http from "node:http";
import crypto from "node:crypto";
import { applyConnectionTimeouts } from "../../src/lib/http-timeouts.js";

export interface ReceivedRequest {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  json: any;
  /** whether X-Signature is sha256=HMAC-SHA256(secret, body), when a secret was given */
  signatureValid: boolean | null;
  status: number;
}

export interface WebhookReceiver {
  url: string;
  requests: ReceivedRequest[];
  /** statuses answered in order; the last one repeats */
  respondWith(statuses: number[]): void;
  setSecret(secret: string | null): void;
  /** resolves once `count` requests have arrived (or rejects after timeoutMs) */
  waitFor(count: number, timeoutMs?: number): Promise<ReceivedRequest[]>;
  close(): Promise<void>;
}

export function verifySignature(secret: string, body: string, header: string | undefined): boolean {
  const expected = "sha256=" + crypto.createHmac("sha256", secret).update(body).digest("hex");
  return typeof header === "string" && header.length === expected.length && crypto.timingSafeEqual(Buffer.from(header), Buffer.from(expected));
}

export async function startWebhookReceiver(): Promise<WebhookReceiver> {
  const requests: ReceivedRequest[] = [];
  let statuses = [200];
  let secret: string | null = null;
  const waiters: Array<() => void> = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      const status = statuses.length > 1 ? statuses.shift()! : statuses[0];
      let json: unknown = null;
      try {
        json = JSON.parse(body);
      } catch {
        /* not JSON */
      }
      requests.push({
        method: req.method ?? "",
        path: req.url ?? "",
        headers: req.headers,
        body,
        json,
        signatureValid: secret === null ? null : verifySignature(secret, body, req.headers["x-signature"] as string | undefined),
        status,
      });
      res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify({ ok: status < 300 }));
      waiters.splice(0).forEach((w) => w());
    });
  });
  applyConnectionTimeouts(server); // as the service sets them: the service, its client, closes idle sockets first
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  return {
    url,
    requests,
    respondWith: (s) => (statuses = [...s]),
    setSecret: (s) => (secret = s),
    waitFor: (count, timeoutMs = 15_000) =>
      new Promise((resolve, reject) => {
        const deadline = setTimeout(() => reject(new Error(`webhook receiver: ${requests.length} of ${count} requests after ${timeoutMs} ms`)), timeoutMs);
        const check = () => {
          if (requests.length >= count) {
            clearTimeout(deadline);
            resolve(requests.slice(0, count));
          } else waiters.push(check);
        };
        check();
      }),
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
