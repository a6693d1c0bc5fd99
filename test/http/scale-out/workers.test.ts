// WORKERS=2 (src/cluster.ts): `src/main.ts` started once serves one port from two worker
// processes; a worker killed with kill -9 is replaced while the port keeps answering; SIGTERM
// to the primary stops every worker gracefully. PostgreSQL only (more than one worker is
// refused on the embedded database, which test/unit covers through the configuration).
import http from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { databaseUrlOf, eventually, SHARED_KEYS, startServerProcess, type ServerProcess } from "./processes.js";

const ON_POSTGRES = Boolean(process.env.DATABASE_URL);

/** A GET on a connection of its own, so that the cluster hands each to the next worker. */
function getOnNewConnection(url: string, key: string): Promise<number> {
  return new Promise((resolve, reject) => {
    http.get(url, { agent: false, headers: { "x-api-key": key } }, (res) => {
      res.resume();
      res.on("end", () => resolve(res.statusCode ?? 0));
    }).on("error", reject);
  });
}

describe.skipIf(!ON_POSTGRES)("WORKERS=2 on one PostgreSQL (skipped without DATABASE_URL)", () => {
  let h: Harness;
  let acme: Tenant;
  let p: ServerProcess;

  const lines = (msg: string) =>
    p.output.flatMap((line) => {
      try {
        const entry = JSON.parse(line) as { msg?: string; pid?: number; path?: string };
        return entry.msg === msg ? [entry] : [];
      } catch {
        return [];
      }
    });
  const readyWorkers = () => new Set(lines("ready").map((l) => l.pid));

  beforeAll(async () => {
    h = await createHarness({ ...SHARED_KEYS });
    acme = await h.createTenant("Acme Workers");
    p = await startServerProcess("workers", { DATABASE_URL: databaseUrlOf(h), WORKERS: "2", LOG_LEVEL: "debug" }, acme.key);
  });

  afterAll(async () => {
    await p?.kill();
    await h?.close();
  });

  it("serves one port from two workers, replaces one that is killed, and stops all on SIGTERM", async () => {
    await eventually(async () => readyWorkers().size === 2, 60_000, "two workers ready");
    const [first, second] = [...readyWorkers()];
    expect(first).not.toBe(second);
    expect(first).toBeTypeOf("number");

    const statuses = [];
    for (let i = 0; i < 12; i++) statuses.push(await getOnNewConnection(`${p.url}/api/v1/devices?limit=1`, acme.key));
    expect(new Set(statuses)).toEqual(new Set([200]));
    const served = await eventually(async () => {
      const pids = new Set(lines("request").filter((l) => l.path === "/api/v1/devices").map((l) => l.pid));
      return pids.size === 2 ? pids : false;
    }, 10_000, "both workers answering");
    expect(served).toEqual(new Set([first, second]));

    process.kill(first!, "SIGKILL");
    const replaced = await eventually(async () => {
      const pids = [...readyWorkers()].filter((pid) => pid !== first && pid !== second);
      return pids.length === 1 ? pids[0] : false;
    }, 60_000, "a replacement worker");
    expect(replaced).toBeTypeOf("number");
    for (let i = 0; i < 4; i++) expect(await getOnNewConnection(`${p.url}/api/v1/devices?limit=1`, acme.key)).toBe(200);

    expect(await p.stop()).toBe(0);
    for (const pid of [second!, replaced]) expect(() => process.kill(pid, 0)).toThrow(); // gone
    expect(lines("shutting down").map((l) => l.pid).sort()).toEqual([second, replaced].sort());
  });
});
