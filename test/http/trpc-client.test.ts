// A TypeScript frontend imports the router type and calls procedures directly.
import { createTRPCClient, httpBatchLink, TRPCClientError } from "@trpc/client";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { AppRouter } from "../../src/index.js";
import { ADMIN_KEY, createHarness, type Harness } from "../support/harness.js";

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h?.close());

const client = (key: string | null) =>
  createTRPCClient<AppRouter>({
    links: [httpBatchLink({ url: `${h.url}/trpc`, headers: () => (key ? { "x-api-key": key } : {}) })],
  });

it("calls a query with the typed client", async () => {
  const org = await client(ADMIN_KEY).organizations.getBySlug.query({ slug: "default" });
  expect(org.slug).toBe("default");
  expect(org.active).toBe(true);
});

it("gets typed errors with the same codes as REST", async () => {
  const err = await client(null).organizations.getBySlug.query({ slug: "default" }).catch((e) => e);
  expect(err).toBeInstanceOf(TRPCClientError);
  expect(err.data.code).toBe("UNAUTHORIZED");
  expect(err.data.httpStatus).toBe(401);
  const missing = await client(ADMIN_KEY).organizations.getBySlug.query({ slug: "missing" }).catch((e) => e);
  expect(missing.data.code).toBe("NOT_FOUND");
});

it("runs a mutation (login) through the client", async () => {
  const tokens = await client(null).auth.login.mutate({ email: "admin@example.test", password: "admin-password-for-tests" });
  expect(tokens.tokenType).toBe("Bearer");
});
