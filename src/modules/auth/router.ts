import { z } from "zod";
import { authedProcedure, publicProcedure, router, sessionProcedure } from "../../trpc/procedures.js";
import { checkPassword, login, LoginThrottled, logout, refresh, actInOrganization, startCookieSession } from "./service.js";
import { clearSessionCookie, setSessionCookie } from "../../trpc/session-cookie.js";
import { signInWithOidc } from "../federation/oidc.js";
import { signInMethods } from "../federation/browser-sign-in.js";
import { exchangeNativeCode, NATIVE_CODE_TTL_SECONDS } from "./native-sign-in.js";

const TAG = "Authentication";

const tokenPair = z.object({
  accessToken: z.string(),
  tokenType: z.literal("Bearer"),
  expiresAt: z.string().datetime(),
  refreshToken: z.string(),
});

const signInInput = z.object({
  email: z.string().min(3).max(320),
  password: z.string().min(1).max(1024),
  organizationId: z.string().uuid().optional().describe("organization to act in; defaults to the oldest membership"),
});

/** Sets Retry-After on a throttled sign-in (the 429's body says the same in words). */
async function throttleAware<T>(res: { setHeader(name: string, value: string): unknown } | null, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (err instanceof LoginThrottled) res?.setHeader("Retry-After", String(err.retryAfterSeconds));
    throw err;
  }
}

export const authRouter = router({
  login: publicProcedure
    .meta({
      openapi: { method: "POST", path: "/auth/login", tags: [TAG], protect: false, summary: "Sign in with e-mail and password" },
      audit: false,
    })
    .input(signInInput)
    .output(tokenPair)
    .mutation(({ ctx, input }) => throttleAware(ctx.res, () => login(ctx.services, ctx.request, input))),

  signIn: publicProcedure
    .meta({
      openapi: {
        method: "POST",
        path: "/auth/session",
        tags: [TAG],
        protect: false,
        summary: "Sign in a browser: the session rides on an HttpOnly cookie",
        description: "For the web console. Sets the `fm_session` cookie (HttpOnly, SameSite=Strict, Secure over HTTPS) naming a server-side session, like the sessions of /auth/login; the body carries no token. Requests that authenticate with the cookie and change state must come from the service's own origin (403 otherwise). Wrong credentials: 401 without saying which part was wrong; too many failures: 429 with Retry-After.",
      },
      audit: false, // writes its own sign-in entries, like login
    })
    .input(signInInput)
    .output(z.object({ signedIn: z.literal(true), organizationId: z.string().uuid().nullable(), expiresAt: z.string().datetime() }))
    .mutation(({ ctx, input }) => throttleAware(ctx.res, async () => {
      const user = await checkPassword(ctx.services, ctx.request, input);
      const session = await startCookieSession(ctx.services, ctx.request, user, input.organizationId);
      if (ctx.res) setSessionCookie(ctx.res, session.secret, session.expiresAt);
      return { signedIn: true as const, organizationId: session.organizationId, expiresAt: session.expiresAt.toISOString() };
    })),

  actIn: sessionProcedure
    .meta({
      openapi: {
        method: "POST",
        path: "/auth/session/organization",
        tags: [TAG],
        summary: "Act in another organization the signed-in user is a member of",
        description: "Changes the organization the current session acts in, for as long as the session lives (the console's organization switcher). Only organizations the user is a member of (others: 404); an active tenant switch ends. Super Admins entering an organization they are not a member of use POST /tenant/switch, which is time-bound and audited as such.",
      },
      audit: { entity: "session", action: "auth.act_in" },
    })
    .input(z.object({ organizationId: z.string().uuid() }))
    .output(z.object({ organizationId: z.string().uuid() }))
    .mutation(({ ctx, input }) => actInOrganization(ctx.db, ctx.principal, input.organizationId)),

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
    .mutation(({ ctx, input }) => {
      // A browser signing out also loses its cookie (harmless for API clients, which have none).
      if (ctx.res) clearSessionCookie(ctx.res);
      return logout(ctx.db, ctx.principal.sessionId, input.refreshToken);
    }),

  providers: publicProcedure
    .meta({
      openapi: {
        method: "GET",
        path: "/auth/providers",
        tags: [TAG],
        protect: false,
        summary: "How a browser can sign in here (the console's sign-in page asks)",
        description: "`password` is always offered. `oidc` is set when sign-in with the OpenID Connect provider is configured (OIDC_ISSUER, OIDC_CLIENT_ID, OIDC_CLIENT_SECRET): its display name and the address a browser navigates to, with `?next=<console path>`, to start it.",
      },
    })
    .input(z.object({}).optional())
    .output(z.object({
      password: z.literal(true),
      oidc: z.object({
        name: z.string().describe("the provider's name for the button: Sign in with <name>"),
        startUrl: z.string().describe("GET /api/v1/auth/oidc/authorize: navigate the browser there (not a fetch)"),
      }).nullable(),
    }))
    .query(({ ctx }) => signInMethods(ctx.services.config)),

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

  oidcToken: publicProcedure
    .meta({
      openapi: {
        method: "POST",
        path: "/auth/oidc/token",
        tags: [TAG],
        protect: false,
        summary: "A native client's one-time code and PKCE verifier for tokens (same tokens as login)",
        description: "The end of a native client's browser sign-in (the fleet CLI, RFC 8252): GET /auth/oidc/authorize with its loopback " +
          "redirect_uri, code_challenge (S256) and state sent the browser back to it with `code`. The code works once, for " +
          `${NATIVE_CODE_TTL_SECONDS} s, with the verifier of that challenge and the same redirect_uri. Every refusal (a wrong verifier, a used or expired code, ` +
          "another redirect_uri, a code not of this service) is a 400 naming the field, and issues nothing.",
      },
      audit: false, // the sign-in was audited when the provider vouched for the user
    })
    .input(z.object({
      code: z.string().min(1).max(2000).describe("the one-time code the loopback callback received"),
      codeVerifier: z.string().regex(/^[A-Za-z0-9._~-]{43,128}$/, "must be a PKCE code verifier: 43 to 128 characters of A-Z a-z 0-9 - . _ ~").describe("the PKCE verifier whose S256 challenge the sign-in started with"),
      redirectUri: z.string().min(1).max(2000).describe("the redirect_uri the sign-in started with"),
    }))
    .output(tokenPair)
    .mutation(({ ctx, input }) => exchangeNativeCode(ctx.services, ctx.request, input)),
});
