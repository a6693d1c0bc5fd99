// WORKERS=2 with METRICS_PORT (docs/observability.md): the primary answers /metrics on loopback
// with both workers' counts summed (prom-client's AggregatorRegistry), so one scrape sees every
// request whichever worker served it; the shared port has no /metrics without a token.
// PostgreSQL only (more than one worker is refused on the embedded database).
import http from "node:http";
import { Readable } from "node:stream";
import { getMetricsFromStream, type PromData } from "prom2javascript";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../../support/oci-registry.js";
import { createHarness, type Harness } from "../../support/harness.js";
import { databaseUrlOf, eventually, SHARED_KEYS, startServerProcess, type ServerProcess } from "../scale-out/processes.js";

const ON_POSTGRES = Boolean(process.env.DATABASE_URL);
const REQUESTS = 12;

/** A GET on a connection of its own, so that the cluster hands each to the next worker. */
function getOnNewConnection(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    http.get(url, { agent: false }, (res) => {
      res.resume();
      res.on("end", () => resolve(res.statusCode ?? 0));
    }).on("error", reject);
  });
}

describe.skipIf(!ON_POSTGRES)("WORKERS=2 with METRICS_PORT (skipped without DATABASE_URL)", () => {
  let h: Harness;
  let p: ServerProcess;
  let metricsPort: number;

  beforeAll(async () => {
    h = await createHarness({ ...SHARED_KEYS });
    metricsPort = await freePort();
    p = await startServerProcess("cluster-metrics", { DATABASE_URL: databaseUrlOf(h), WORKERS: "2", METRICS_PORT: String(metricsPort), LOG_LEVEL: "debug" });
  });
  afterAll(async () => {
    await p?.kill();
    await h?.close();
  });

  const servedBy = () => new Set(p.output.flatMap((line) => {
    try {
      const entry = JSON.parse(line) as { msg?: string; pid?: number; path?: string };
      return entry.msg === "request" && entry.path === "/healthz" ? [entry.pid] : [];
    } catch {
      return [];
    }
  }));

  it("sums both workers' requests in one scrape of the primary's metrics port", async () => {
    await eventually(async () => {
      const res = await fetch(`http://127.0.0.1:${metricsPort}/metrics`).catch(() => null);
      return res?.status === 200;
    }, 60_000, "the primary's metrics port");
    for (let i = 0; i < REQUESTS; i++) expect(await getOnNewConnection(`${p.url}/healthz`)).toBe(200);
    await eventually(async () => servedBy().size === 2, 10_000, "both workers answering /healthz");

    const res = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
    expect(res.status).toBe(200);
    // only the request counter's family: prom2javascript knows no NaN, which the event-loop lag may be
    const text = await res.text();
    const family = text.split("\n\n").find((block) => block.includes("# TYPE fleet_http_requests_total counter"))!;
    const metrics = await getMetricsFromStream(Readable.from([family]));
    const healthz = (metrics.fleet_http_requests_total.data as PromData[]).find((d) => d.labels.route === "/healthz" && d.labels.status_class === "2xx");
    expect(healthz?.value).toBe(REQUESTS);
    // the shared port: no token configured, so no /metrics there
    expect(await getOnNewConnection(`${p.url}/metrics`)).toBe(404);
  });
});
