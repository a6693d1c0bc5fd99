// The device's typed tRPC client (agent/src/core/service-client.ts) against a server on loopback
// that answers as the service and what stands in front of it do: what the agent reads of each
// answer (status, Retry-After, message) is what the service sent, as it was on the REST paths.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { JsonClient } from "../../../agent/src/core/json-client.js";
import { ServiceClient } from "../../../agent/src/core/service-client.js";

interface Seen {
  method: string;
  url: string;
  authorization?: string;
  body: string;
}

let server: http.Server;
let url: string;
const seen: Seen[] = [];
/** what the server answers next: status, headers, body text */
let next: { status: number; headers: Record<string, string>; body: string };

beforeAll(async () => {
  server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      seen.push({ method: req.method!, url: req.url!, authorization: req.headers.authorization, body: Buffer.concat(chunks).toString("utf8") });
      res.writeHead(next.status, next.headers);
      res.end(next.body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise((resolve) => server.close(resolve)));

const json = (status: number, body: unknown, headers: Record<string, string> = {}) => ({ status, headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) });

function client() {
  const http = new JsonClient(url, 2, 5000);
  return { service: new ServiceClient(http), close: () => http.close() };
}

describe("the device's tRPC client", () => {
  it("sends a mutation as tRPC does (POST /trpc/<path>, the input as JSON, the device token) and answers 200 with the output", async () => {
    const { service, close } = client();
    next = json(200, { result: { data: { accepted: 2 } } });
    const snapshots = [{ timestamp: "2026-12-06T00:00:00.000Z", memoryUsedBytes: 1, memoryTotalBytes: 2, diskUsedBytes: 1, diskTotalBytes: 2, uptimeSeconds: 5, containersRunning: 0, containersFailed: 0, errorCount: 0 }];
    const res = await service.answer(() => service.trpc.telemetryIngest.ingest.mutate({ snapshots }, ServiceClient.as("Bearer t0k3n")));
    close();
    expect(res).toMatchObject({ status: 200, body: { accepted: 2 } });
    expect(seen.at(-1)).toEqual({ method: "POST", url: "/trpc/telemetryIngest.ingest", authorization: "Bearer t0k3n", body: JSON.stringify({ snapshots }) });
  });

  it("sends a query as tRPC does (GET with ?input=), and a call without a token carries none", async () => {
    const { service, close } = client();
    next = json(200, { result: { data: { component: "web" } } });
    await service.answer(() => service.trpc.agent.componentPackage.query({ deploymentId: "8f0b1c9e-8d7a-4a1e-9a55-0d8a2c7b6e11", component: "web" }, ServiceClient.as("Bearer t")));
    expect(seen.at(-1)!.method).toBe("GET");
    expect(seen.at(-1)!.url).toBe(`/trpc/agent.componentPackage?input=${encodeURIComponent(JSON.stringify({ deploymentId: "8f0b1c9e-8d7a-4a1e-9a55-0d8a2c7b6e11", component: "web" }))}`);
    next = json(200, { result: { data: { deviceId: "d" } } });
    await service.answer(() => service.trpc.agent.enroll.mutate({ enrollmentToken: "fme_x", reportedDeviceId: "hw-1", csr: "pem" }));
    close();
    expect(seen.at(-1)!.authorization).toBeUndefined();
  });

  it("a refusal tRPC wrote keeps its status, message and code (401: the agent stops asking)", async () => {
    const { service, close } = client();
    next = json(401, { error: { message: "Device certificate is revoked", code: -32001, data: { code: "UNAUTHORIZED", httpStatus: 401, requestId: "r-1" } } });
    const res = await service.answer(() => service.trpc.agent.renewCertificate.mutate({ csr: "pem" }, ServiceClient.as("Bearer t")));
    close();
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ code: "UNAUTHORIZED", message: "Device certificate is revoked", data: { code: "UNAUTHORIZED", httpStatus: 401, requestId: "r-1" } });
  });

  it("the ingest gate's 503 and the door's REST-shaped 429 keep their Retry-After", async () => {
    const { service, close } = client();
    next = json(503, { error: { message: "Ingest is busy", code: -32603, data: { code: "SERVICE_UNAVAILABLE", httpStatus: 503 } } }, { "retry-after": "7" });
    const busy = await service.answer(() => service.trpc.logsIngest.ingest.mutate({ entries: [] }, ServiceClient.as("Bearer t")));
    expect(busy.status).toBe(503);
    expect(busy.headers["retry-after"]).toBe("7");
    // the rate limiter answers before tRPC, in the REST facade's shape
    next = json(429, { code: "TOO_MANY_REQUESTS", message: "Too many requests; retry after 3 s", data: { code: "TOO_MANY_REQUESTS", httpStatus: 429, requestId: "r-2" } }, { "retry-after": "3" });
    const limited = await service.answer(() => service.trpc.logsIngest.ingest.mutate({ entries: [] }, ServiceClient.as("Bearer t")));
    close();
    expect(limited.status).toBe(429);
    expect(limited.headers["retry-after"]).toBe("3");
    expect(limited.body).toMatchObject({ code: "TOO_MANY_REQUESTS", message: "Too many requests; retry after 3 s" });
  });

  it("a proxy's HTML page keeps its status and says what it said", async () => {
    const { service, close } = client();
    next = { status: 502, headers: { "content-type": "text/html" }, body: "<html><body>502 Bad Gateway</body></html>" };
    const res = await service.answer(() => service.trpc.logsIngest.ingest.mutate({ entries: [] }, ServiceClient.as("Bearer t")));
    close();
    expect(res.status).toBe(502);
    expect((res.body as unknown as { message: string }).message).toContain("502 Bad Gateway");
  });

  it("an answer that never came is thrown as the network's own error, as on the REST paths", async () => {
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const jsonClient = new JsonClient(`http://127.0.0.1:${port}`, 1, 5000);
    const service = new ServiceClient(jsonClient);
    await expect(service.answer(() => service.trpc.agent.enroll.mutate({ enrollmentToken: "fme_x", reportedDeviceId: "hw-1", csr: "pem" }))).rejects.toThrow(/ECONNREFUSED/);
    jsonClient.close();
  });
});

describe("a kept-alive connection the server closed at the moment of its reuse", () => {
  it("is asked again once on a fresh connection (the request never reached the server); a fresh connection's reset is the caller's", async () => {
    let requests = 0;
    /** the request numbers whose connection the server drops instead of answering */
    const drop = new Set<number>();
    const server = http.createServer((req, res) => {
      requests++;
      req.resume();
      if (drop.has(requests)) return void req.socket.destroy();
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ n: requests }));
    });
    server.keepAliveTimeout = 60_000;
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const client = new JsonClient(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, 1);
    try {
      expect((await client.request("POST", "/a", {})).body).toEqual({ n: 1 });
      drop.add(2); // the second request comes on the kept-alive connection, which the server drops
      expect(await client.request("POST", "/b", {})).toMatchObject({ status: 200, body: { n: 3 } });
      client.close();
      // a request on a fresh connection that the server drops is not asked again
      const fresh = new JsonClient(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, 1);
      drop.add(4);
      await expect(fresh.request("POST", "/c", {})).rejects.toThrow(/socket hang up/);
      expect(requests).toBe(4);
      fresh.close();
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
