// Ctrl-C in a terminal reaches the service two or three times within milliseconds (the
// terminal signals the whole process group, and npm and tsx relay it again). That echo must
// not turn the graceful stop into an immediate exit: the request in flight is answered, the
// process exits 0. A second Ctrl-C a moment later still leaves at once.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServerProcess, type ServerProcess } from "../scale-out/processes.js";

const KEY = "fm_stopsignals" + "k".repeat(30);

/** A Git server that takes `delayMs` to answer anything (404): a sync that stays in flight. */
async function slowGitServer(delayMs: number) {
  let arrived: () => void = () => undefined;
  const server = http.createServer((_req, res) => {
    arrived();
    setTimeout(() => res.writeHead(404).end(), delayMs);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/fleet.git`,
    /** resolves when the next request reaches the server (a fixed wait is too short on a loaded machine) */
    nextRequest: () => new Promise<void>((resolve) => (arrived = resolve)),
    close: () => new Promise((r) => server.close(r)),
  };
}

describe("stop signals", () => {
  let git: Awaited<ReturnType<typeof slowGitServer>>;
  beforeAll(async () => {
    git = await slowGitServer(4000);
  });
  afterAll(() => git?.close());

  async function serviceWithSlowSync(): Promise<{ service: ServerProcess; sync: Promise<{ status: number; body: any }> }> {
    // (PGlite, already migrated: what is tested is the stop, not the first start)
    const service = await startServerProcess("signals", { BOOTSTRAP_API_KEY: KEY }, KEY, "migrated");
    const registry = await service.api("POST", "/api/v1/registries/git", { body: { name: "Slow", url: git.url, syncIntervalMinutes: 0 } });
    expect(registry.status, registry.text).toBe(201);
    const reached = git.nextRequest();
    const sync = service.api("POST", `/api/v1/registries/git/${registry.body.id}/sync`);
    await reached; // the sync is waiting for the slow server
    return { service, sync };
  }

  it("the echo of one Ctrl-C (three signals within milliseconds) stops gracefully: the request in flight is answered, exit 0", async () => {
    const { service, sync } = await serviceWithSlowSync();
    service.child.kill("SIGINT");
    await new Promise((r) => setTimeout(r, 20));
    service.child.kill("SIGINT");
    service.child.kill("SIGTERM");
    const answered = await sync;
    expect(answered.status).toBe(200);
    expect(answered.body).toMatchObject({ success: false, errors: [expect.stringContaining("404")] });
    expect(await service.exited).toBe(0);
    expect(service.output.some((line) => line.includes('"msg":"shutting down"'))).toBe(true);
  }, 120_000);

  it("a second Ctrl-C a moment later leaves at once (exit 1), without waiting for the request", async () => {
    const { service, sync } = await serviceWithSlowSync();
    const outcome = sync.then(() => "answered", () => "cut off");
    service.child.kill("SIGINT");
    await new Promise((r) => setTimeout(r, 1100));
    service.child.kill("SIGINT");
    expect(await service.exited).toBe(1);
    expect(await outcome).toBe("cut off"); // the slow server had not answered yet
  }, 120_000);
});
