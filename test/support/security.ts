// The shared security suite every capability runs against each of its procedures:
// no credential 401, bad credential 401, missing permission 403, other tenant's resource 404.
import { expect } from "vitest";
import type { Harness, Tenant } from "./harness.js";

export interface SecurityCase {
  method: string;
  /** a path that the owner tenant may call successfully */
  path: string;
  body?: unknown;
  /** permission the operation needs; a key holding everything else must get 403 */
  permission?: string;
  /** a path naming a resource of the owner tenant, called by another tenant: must be 404 */
  foreignPath?: string;
}

export async function expectSecured(h: Harness, owner: Tenant, stranger: Tenant, c: SecurityCase) {
  const label = `${c.method} ${c.path}`;
  const none = await h.api(c.method, c.path, { key: null, body: c.body });
  expect(none.status, `${label} without credentials`).toBe(401);
  expect(none.body.code, label).toBe("UNAUTHORIZED");

  const bad = await h.api(c.method, c.path, { key: "fm_notARealKey0000000000000000000000000000", body: c.body });
  expect(bad.status, `${label} with a bad key`).toBe(401);

  const badToken = await h.api(c.method, c.path, { key: null, token: "not-a-jwt", body: c.body });
  expect(badToken.status, `${label} with a bad bearer token`).toBe(401);

  if (c.permission) {
    const { ALL_PERMISSIONS } = await import("../../src/trpc/permissions.js");
    const others = ALL_PERMISSIONS.filter((p) => p !== c.permission && !(c.permission!.endsWith(":admin") && p === c.permission!.replace(":admin", ":write")));
    const weakKey = await h.createKey(owner.org.id, others.filter((p) => p !== "platform:admin"));
    const denied = await h.api(c.method, c.path, { key: weakKey, body: c.body });
    expect(denied.status, `${label} without ${c.permission}`).toBe(403);
    expect(denied.body.code, label).toBe("FORBIDDEN");
  }

  if (c.foreignPath) {
    const foreign = await h.api(c.method, c.foreignPath, { key: stranger.key, body: c.body });
    expect(foreign.status, `${c.method} ${c.foreignPath} by another tenant`).toBe(404);
  }
}
