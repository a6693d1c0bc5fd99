// The input and output fields that every registry kind (Git, OCI, global OCI) writes the same
// way, so that each limit and each OpenAPI text is stated once.
import { z } from "zod";
import { pagingInput } from "../../lib/paging.js";

/** One set for every kind: ./git/credentials.ts checks and uses the credential of each alike. */
export const REGISTRY_AUTH_TYPES = ["NONE", "BASIC", "TOKEN"] as const;
export type RegistryAuthType = (typeof REGISTRY_AUTH_TYPES)[number];

/** 0 means "manual syncs only"; at most a week. */
export const MAX_SYNC_INTERVAL_MINUTES = 10_080;

export const registryName = z.string().trim().min(2).max(100);

/**
 * An http(s) URL of at most 2048 characters without credentials in it (they belong in
 * `credential`, sealed at rest); `refuseMore` adds what one kind refuses beyond that.
 */
export function registryUrl(refuseMore: (url: URL, ctx: z.RefinementCtx) => void) {
  return z.string().trim().max(2048).superRefine((value, ctx) => {
    let url: URL;
    try {
      url = new URL(value);
    } catch {
      ctx.addIssue({ code: "custom", message: "must be an http:// or https:// URL" });
      return;
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") ctx.addIssue({ code: "custom", message: "must be an http:// or https:// URL" });
    else if (url.username || url.password) ctx.addIssue({ code: "custom", message: "must not carry credentials: send them in credential" });
    else refuseMore(url, ctx);
  });
}

/** The limits are common; each kind's OpenAPI text says in its own words what the credential holds. */
export const registryCredential = (description: string) => z.string().min(1).max(4096).describe(description);

export const syncIntervalMinutes = z.number().int().min(0).max(MAX_SYNC_INTERVAL_MINUTES).describe("0 = manual syncs only");

/** A JSON boolean only: the pipe keeps trpc-to-openapi from coercing "true". */
export const bodyBoolean = z.boolean().pipe(z.boolean());

export const listRegistriesInput = z.object({
  ...pagingInput,
  enabled: z.stringbool().optional(),
});

export const idInput = z.object({ id: z.string().uuid() });

export const deletedOutput = z.object({ id: z.string(), deleted: z.literal(true) });
