import { z } from "zod";
import { authedProcedure, publicProcedure, router } from "../../trpc/procedures.js";
import { login, logout, refresh } from "./service.js";

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
    .mutation(({ ctx, input }) => login(ctx.services, ctx.request, input)),

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
});
