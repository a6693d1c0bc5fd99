// Verified API keys are remembered for API_KEY_CACHE_MS per process. A change made through
// this process (revoking the key, disabling its creator, taking a permission away) holds at
// the very next request; a change made elsewhere (another process: here, straight in the
// database) holds within API_KEY_CACHE_MS.
import { afterAll, beforeAll, expect, it } from "vitest";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { API_KEY_CACHE_MS } from "../../../src/trpc/auth.js";
import { sha256Hex } from "../../../src/lib/crypto.js";

let h: Harness;
let acme: Tenant;

beforeAll(async () => {
  h = await createHarness();
  acme = await h.createTenant("Acme Key Cache");
});

afterAll(async () => {
  await h?.close();
});

const read = (key: string) => h.api("GET", "/api/v1/alert-rules", { key });

it("a key revoked through the API is refused at the next request", async () => {
  const key = await h.createKey(acme.org.id, ["alerts:read"]);
  expect((await read(key)).status).toBe(200);
  const row = await h.services.prisma.apiKey.findUniqueOrThrow({ where: { keyHash: sha256Hex(key) } });
  const revoked = await h.api("DELETE", `/api/v1/organizations/${acme.org.id}/api-keys/${row.id}`, { key: acme.key });
  expect(revoked.status, revoked.text).toBe(200);
  expect((await read(key)).status).toBe(401);
});

it("a key revoked by another process is refused within API_KEY_CACHE_MS", async () => {
  const key = await h.createKey(acme.org.id, ["alerts:read"]);
  expect((await read(key)).status).toBe(200);
  const revokedAt = Date.now();
  await h.services.prisma.apiKey.update({ where: { keyHash: sha256Hex(key) }, data: { revokedAt: new Date() } });
  let status = 200;
  while (status === 200 && Date.now() - revokedAt < API_KEY_CACHE_MS + 2_000) {
    status = (await read(key)).status;
    if (status === 200) await new Promise((r) => setTimeout(r, 200));
  }
  expect(status).toBe(401);
  expect(Date.now() - revokedAt).toBeLessThan(API_KEY_CACHE_MS + 1_000);
});
