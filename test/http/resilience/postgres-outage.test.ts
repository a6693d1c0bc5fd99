// PostgreSQL goes away under load and comes back: while it is unreachable every request gets
// a 503 in the API's error shape (no stack, no SQL, no connection string) and readiness says
// so; once it is back the service recovers by itself, without a restart, and nothing written
// before the outage is lost. The database is taken away by cutting a TCP proxy between the
// service and PostgreSQL, so the server other test files share is never touched.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { startTcpProxy, type TcpProxy } from "../../support/tcp-proxy.js";
import { insertDevices } from "../agent/fleet-support.js";

const ON_POSTGRES = Boolean(process.env.DATABASE_URL);

describe.skipIf(!ON_POSTGRES)("PostgreSQL outage (skipped without DATABASE_URL: PGlite runs in the process)", () => {
  let h: Harness;
  let proxy: TcpProxy;
  let acme: Tenant;
  let deviceId: string;

  beforeAll(async () => {
    const target = new URL(process.env.DATABASE_URL!);
    proxy = await startTcpProxy(target.hostname, Number(target.port || 5432));
    h = await createHarness({}, {
      rewriteDatabaseUrl: (url) => {
        url.hostname = "127.0.0.1";
        url.port = String(proxy.port);
        return url;
      },
    });
    acme = await h.createTenant("Acme Outage");
    [deviceId] = await insertDevices(h, acme.org.id, [{ name: "outage-1" }]);
  });

  afterAll(async () => {
    await proxy?.up().catch(() => undefined);
    await h?.close();
    await proxy?.close();
  });

  it("answers 503 while the database is unreachable and recovers by itself", async () => {
    const created = await h.api("POST", "/api/v1/notification-targets", { key: acme.key, body: { name: "before outage", type: "webhook", url: "http://127.0.0.1:9/hook" } });
    expect(created.status, created.text).toBe(201);

    await proxy.down();
    // Load during the outage: reads, writes and readiness.
    const during = await Promise.all([
      ...Array.from({ length: 10 }, () => h.api("GET", "/api/v1/notification-targets", { key: acme.key })),
      // op 1 (the marketplace sync history) included: the catalog cannot be reached
      h.api("GET", "/api/v1/marketplace-store/sync-history?limit=10&offset=0", { key: acme.key }),
      // the device reads, which run on the driver rather than through Prisma
      h.api("GET", `/api/v1/devices/${deviceId}`, { key: acme.key }),
      h.api("GET", "/api/v1/devices", { key: acme.key }),
      ...Array.from({ length: 5 }, (_, i) => h.api("POST", "/api/v1/notification-targets", { key: acme.key, body: { name: `during ${i}`, type: "webhook", url: "http://127.0.0.1:9/hook" } })),
    ]);
    for (const res of during) {
      expect(res.status, res.text).toBe(503);
      expect(res.body.code).toBe("SERVICE_UNAVAILABLE");
      expect(res.text).not.toMatch(/stack|SELECT|INSERT|ECONNREFUSED|postgres(ql)?:\/\/|at \//i);
    }
    const ready = await fetch(`${h.url}/readyz`);
    expect(ready.status).toBe(503);
    expect(await fetch(`${h.url}/healthz`).then((r) => r.status)).toBe(200);

    await proxy.up();
    const deadline = Date.now() + 15_000;
    let status = 0;
    while (Date.now() < deadline) {
      status = (await h.api("GET", "/api/v1/notification-targets", { key: acme.key })).status;
      if (status === 200) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(status).toBe(200);
    expect((await fetch(`${h.url}/readyz`)).status).toBe(200);
    expect((await h.api("GET", `/api/v1/devices/${deviceId}`, { key: acme.key })).body.name).toBe("outage-1");
    const after = await h.api("GET", "/api/v1/notification-targets", { key: acme.key });
    // written before: kept; refused during: not half-written
    expect(after.body.items.map((t: { name: string }) => t.name)).toEqual(["before outage"]);
    const write = await h.api("POST", "/api/v1/notification-targets", { key: acme.key, body: { name: "after outage", type: "webhook", url: "http://127.0.0.1:9/hook" } });
    expect(write.status, write.text).toBe(201);
    // the logs name the outage without leaking the connection string
    expect(h.logs.join("\n")).not.toContain(process.env.DATABASE_URL!);
  });
});
