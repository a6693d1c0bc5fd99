import { z } from "zod";
import { authedProcedure, publicProcedure, router } from "../../trpc/procedures.js";
import { login, LoginThrottled, logout, refresh } from "./service.js";
import { signInWithOidc } from "../federation/oidc.js";

const TAG = "Authentication";

const tokenPair = z.object({
  accessToken: z.string(),
  tokenType: z.literal("Bearer"),
  expiresAt: z.string().datetime(),
  refreshToken: z.string(),
});

export const authRouter = router({
  login: publicProcedure
    .meta({
      openapi: { method: "POST", path: "/auth/login", tags: [TAG], protect: false, summary: "Sign in with e-mail and password" },
      audit: false,
    })
    .input(z.object({
      email: z.string().min(3).max(320),
      password: z.string().min(1).max(1024),
      organizationId: z.string().uuid().optional().describe("organization to act in; defaults to the oldest membership"),
    }))
    .output(tokenPair)
    .mutation(async ({ ctx, input }) => {
      try {
        return await login(ctx.services, ctx.request, input);
      } catch (err) {
        if (err instanceof LoginThrottled) ctx.res?.setHeader("Retry-After", String(err.retryAfterSeconds));
        throw err;
      }
    }),

  refresh: publicProcedure
    .meta({
      openapi: { method: "POST", path: "/auth/refresh", tags: [TAG], protect: false, summary: "Exchange a refresh token for new tokens (the old one stops working)" },
      audit: false,
    })
    .input(z.object({ refreshToken: z.string().min(1).max(200) }))
    .output(tokenPair)
    .mutation(({ ctx, input }) => refresh(ctx.services, ctx.request, input.refreshToken)),

  logout: authedProcedure
    .meta({
      openapi: { method: "POST", path: "/auth/logout", tags: [TAG], summary: "End the current session (or the one of the given refresh token)" },
      audit: { entity: "session" },
    })
    .input(z.object({ refreshToken: z.string().max(200).optional() }).default({}))
    .output(z.object({ revoked: z.number().int() }))
    .mutation(({ ctx, input }) => logout(ctx.db, ctx.principal.sessionId, input.refreshToken)),

  oidc: publicProcedure
    .meta({
      openapi: { method: "POST", path: "/auth/oidc", tags: [TAG], protect: false, summary: "Sign in with an ID token of the configured OpenID Connect provider (same tokens as login)" },
      audit: false, // writes its own sign-in entries, like login
    })
    .input(z.object({
      idToken: z.string().min(1).max(16_384),
      organizationId: z.string().uuid().optional().describe("organization to act in; defaults to the oldest membership"),
    }))
    .output(tokenPair)
    .mutation(({ ctx, input }) => signInWithOidc(ctx.services, ctx.request, input)),
});
