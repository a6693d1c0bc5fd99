// The fetch's own limits against a real Git server: the outbound address policy (end to end,
// with OUTBOUND_ALLOW_PRIVATE_NETWORKS=false), the byte limit and the deadline.
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../../src/lib/logger.js";
import { fetchAndRead, GitFetchError, type FetchOptions } from "../../../src/modules/registries/git/repository.js";
import { createHarness, type Harness } from "../../support/harness.js";
import { startGitServer, type GitServer } from "../../support/git-server/index.js";
import { appYaml, createRegistry, sync } from "./support.js";

let git: GitServer;
let scratch: string;
beforeAll(async () => {
  git = await startGitServer();
  scratch = fs.mkdtempSync(path.join(os.tmpdir(), "fleet-fetch-limits-"));
});
afterAll(async () => {
  await git?.close();
  fs.rmSync(scratch, { recursive: true, force: true });
});

let n = 0;
function options(url: string, extra: Partial<FetchOptions> = {}): FetchOptions {
  n += 1;
  return {
    cacheDir: path.join(scratch, `cache-${n}`),
    url,
    branch: "main",
    policy: { allowPrivateNetworks: true },
    timeoutMs: 30_000,
    maxBytes: 50 * 1024 * 1024,
    logger: createLogger("silent"),
    ...extra,
  };
}

const failure = (promise: Promise<unknown>) => promise.then(() => { throw new Error("expected a failure"); }, (err: Error) => err);

describe("fetch limits", () => {
  it("fetches within the limits", async () => {
    const { url, commit } = await git.createRepo("small", { "app.yaml": appYaml("small", "1.0.0") });
    const fetched = await fetchAndRead(options(url), async (oid) => oid);
    expect(fetched).toEqual({ commit, value: commit });
  });

  it("stops a download larger than the byte limit", async () => {
    const { url } = await git.createRepo("large", { "blob.bin": randomBytes(256 * 1024), "app.yaml": appYaml("large", "1.0.0") });
    const err = await failure(fetchAndRead(options(url, { maxBytes: 64 * 1024 }), async () => null));
    expect(err).toBeInstanceOf(GitFetchError);
    expect(err.message).toBe("the repository download exceeded the limit of 64 KiB");
  });

  it("gives up at the deadline when the server does not answer", async () => {
    const sockets = new Set<import("node:net").Socket>();
    const silent = http.createServer(() => undefined); // accepts, never answers
    silent.on("connection", (socket) => sockets.add(socket));
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    try {
      const url = `http://127.0.0.1:${(silent.address() as AddressInfo).port}/slow.git`;
      const err = await failure(fetchAndRead(options(url, { timeoutMs: 1000 }), async () => null));
      expect(err).toBeInstanceOf(GitFetchError);
      expect(err.message).toBe("the fetch did not finish within 1 s");
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => silent.close(resolve));
    }
  });

  it("refuses loopback when private networks are not allowed", async () => {
    const { url } = await git.createRepo("private-net", { "app.yaml": appYaml("private-net", "1.0.0") });
    const err = await failure(fetchAndRead(options(url, { policy: { allowPrivateNetworks: false } }), async () => null));
    expect(err.message).toMatch(/^Outbound request to 127\.0\.0\.1 refused: 127\.0\.0\.1 is a loopback address/);
  });
});

describe("the outbound policy through the API", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness({ OUTBOUND_ALLOW_PRIVATE_NETWORKS: "false" });
  });
  afterAll(() => h?.close());

  it("records a refused address as the sync's failure", async () => {
    const { url } = await git.createRepo("refused", { "app.yaml": appYaml("refused", "1.0.0") });
    const registry = await createRegistry(h, null, { url: url.replace("127.0.0.1", "localhost") });
    const res = await sync(h, null, registry.id);
    expect(res.status).toBe(200);
    expect(res.body.success).toBe(false);
    expect(res.body.errors[0]).toMatch(/^Outbound request to localhost refused: .* is a loopback address and private networks are not allowed/);
    const got = await h.api("GET", `/api/v1/registries/git/${registry.id}`);
    expect(got.body.lastSyncError).toBe(res.body.errors[0]);
  });

  it("refuses link-local and metadata addresses when the registry is created", async () => {
    for (const url of ["http://169.254.169.254/repo.git", "http://[fe80::1]/repo.git"]) {
      const res = await h.api("POST", "/api/v1/registries/git", { body: { name: `meta ${url.length}`, url } });
      expect(res.status, url).toBe(400);
      expect(res.body.message).toMatch(/^Invalid input: url: /);
    }
  });
});
