// A small but real OpenID Connect provider on loopback, for the service's browser sign-in
// (Authorization Code with PKCE): discovery, an authorization endpoint that signs in
// `provider.user` and sends the browser back with a code (or with `provider.answer`'s error),
// at once or, with `provider.confirm`, after the user submits a page of the provider's own (as
// a real provider's sign-in form: the way back then starts on the provider's site, which is
// what SameSite rules look at), a token endpoint that checks the client's credentials, the single use of the code,
// the redirect URI and the PKCE code verifier (S256), and the JWKS. ID tokens are signed with
// jose. What the service sent is kept in `tokenRequests` for assertions.
import crypto from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { calculateJwkThumbprint, exportJWK, generateKeyPair, SignJWT, type JWK } from "jose";
import { applyConnectionTimeouts } from "../../src/lib/http-timeouts.js";

export interface ProviderUser {
  sub: string;
  email?: string;
  emailVerified?: boolean;
  name?: string;
  groups?: string[];
}

export interface TokenRequest {
  clientAuthenticated: boolean;
  /** the PKCE verifier matched the challenge of the authorization request */
  verifierMatched: boolean;
  redirectUri: string | null;
  outcome: "issued" | "invalid_client" | "invalid_grant" | "invalid_request";
}

export interface OidcProvider {
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** who the authorization endpoint signs in */
  user: ProviderUser;
  /** "sign-in" (default) or a refusal the authorization endpoint answers with */
  answer: "sign-in" | { error: string; description?: string };
  /** changes the claims of the next ID tokens (a wrong nonce, say) */
  tamper: ((claims: Record<string, unknown>) => Record<string, unknown>) | null;
  /** the authorization endpoint answers a page whose form the user submits, instead of redirecting at once */
  confirm: boolean;
  /** the token endpoint answers 503 */
  tokenEndpointDown: boolean;
  /** redirect URIs the client registered (exact match, as real providers do) */
  redirectUris: Set<string>;
  /** every authorization request as received */
  authorizationRequests: URLSearchParams[];
  tokenRequests: TokenRequest[];
  /** codes issued (to check that none reaches a log) */
  codesIssued: string[];
  idTokensIssued: string[];
  close(): Promise<void>;
}

interface PendingCode {
  redirectUri: string;
  challenge: string;
  nonce: string | null;
  user: ProviderUser;
  used: boolean;
}

/** The service's settings for signing in with `provider` from the console (createHarness env). */
export function clientSettingsOf(provider: OidcProvider, name = "Test IdP"): Record<string, string> {
  return { OIDC_ISSUER: provider.issuer, OIDC_CLIENT_ID: provider.clientId, OIDC_CLIENT_SECRET: provider.clientSecret, OIDC_PROVIDER_NAME: name };
}

/** Starts the provider on `host` (default 127.0.0.1), port chosen by the system. */
export async function startOidcProvider(options: { host?: string; clientId?: string; clientSecret?: string } = {}): Promise<OidcProvider> {
  const host = options.host ?? "127.0.0.1";
  const { privateKey, publicKey } = await generateKeyPair("RS256", { extractable: true });
  const jwk: JWK = await exportJWK(publicKey);
  const kid = await calculateJwkThumbprint(jwk);
  const publicJwk = { ...jwk, kid, alg: "RS256", use: "sig" };
  const codes = new Map<string, PendingCode>();
  /** authorization requests waiting for the user to confirm (provider.confirm) */
  const waiting = new Map<string, URLSearchParams>();

  const server = http.createServer((req, res) => void handle(req, res).catch((err) => {
    res.writeHead(500, { "content-type": "text/plain" }).end(String(err));
  }));
  applyConnectionTimeouts(server); // as the service sets them: the service, its client, closes idle sockets first
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const issuer = `http://${host}:${(server.address() as AddressInfo).port}`;

  const provider: OidcProvider = {
    issuer,
    clientId: options.clientId ?? "fleet-console",
    clientSecret: options.clientSecret ?? `provider-secret-${crypto.randomBytes(12).toString("hex")}`,
    user: { sub: crypto.randomUUID(), email: "someone@idp.example.test" },
    answer: "sign-in",
    tamper: null,
    confirm: false,
    tokenEndpointDown: false,
    redirectUris: new Set(),
    authorizationRequests: [],
    tokenRequests: [],
    codesIssued: [],
    idTokensIssued: [],
    close: () => new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };

  const json = (res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) =>
    void res.writeHead(status, { "content-type": "application/json", "cache-control": "no-store", ...headers }).end(JSON.stringify(body));

  async function handle(req: http.IncomingMessage, res: http.ServerResponse) {
    const url = new URL(req.url ?? "/", issuer);
    if (req.method === "GET" && url.pathname === "/.well-known/openid-configuration") {
      return json(res, 200, {
        issuer,
        authorization_endpoint: `${issuer}/authorize`,
        token_endpoint: `${issuer}/token`,
        jwks_uri: `${issuer}/jwks`,
        response_types_supported: ["code"],
        subject_types_supported: ["public"],
        id_token_signing_alg_values_supported: ["RS256"],
        code_challenge_methods_supported: ["S256"],
        token_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post"],
        scopes_supported: ["openid", "email", "profile", "groups"],
        authorization_response_iss_parameter_supported: true,
      });
    }
    if (req.method === "GET" && url.pathname === "/jwks") return json(res, 200, { keys: [publicJwk] });
    if (req.method === "GET" && url.pathname === "/authorize") {
      if (!provider.confirm) return authorize(url.searchParams, res);
      const id = crypto.randomUUID();
      waiting.set(id, url.searchParams);
      const page = `<!doctype html><html lang="en"><head><meta charset="utf-8"><link rel="icon" href="data:,"><title>Test IdP</title></head><body>
<form method="post" action="/authorize/confirm"><input type="hidden" name="request" value="${id}"><button type="submit">Continue</button></form></body></html>`;
      return void res.writeHead(200, { "content-type": "text/html" }).end(page);
    }
    if (req.method === "POST" && url.pathname === "/authorize/confirm") {
      const params = waiting.get(new URLSearchParams(await bodyOf(req)).get("request") ?? "");
      if (!params) return void res.writeHead(400).end();
      return authorize(params, res);
    }
    if (req.method === "POST" && url.pathname === "/token") return token(req, res);
    res.writeHead(404).end();
  }

  function authorize(params: URLSearchParams, res: http.ServerResponse) {
    provider.authorizationRequests.push(params);
    const redirectUri = params.get("redirect_uri") ?? "";
    // Never redirect to an address the client did not register (RFC 6749 4.1.2.1): say so here.
    if (params.get("client_id") !== provider.clientId || !provider.redirectUris.has(redirectUri)) {
      return void res.writeHead(400, { "content-type": "text/plain" }).end("unknown client or unregistered redirect_uri");
    }
    const back = new URL(redirectUri);
    const state = params.get("state");
    if (state !== null) back.searchParams.set("state", state);
    back.searchParams.set("iss", issuer);
    const challenge = params.get("code_challenge");
    if (params.get("response_type") !== "code" || params.get("code_challenge_method") !== "S256" || !challenge || !params.get("scope")?.split(" ").includes("openid")) {
      back.searchParams.set("error", "invalid_request");
    } else if (provider.answer !== "sign-in") {
      back.searchParams.set("error", provider.answer.error);
      if (provider.answer.description) back.searchParams.set("error_description", provider.answer.description);
    } else {
      const code = crypto.randomBytes(24).toString("base64url");
      codes.set(code, { redirectUri, challenge, nonce: params.get("nonce"), user: { ...provider.user }, used: false });
      provider.codesIssued.push(code);
      back.searchParams.set("code", code);
    }
    res.writeHead(302, { location: back.href, "cache-control": "no-store" }).end();
  }

  async function bodyOf(req: http.IncomingMessage): Promise<string> {
    let raw = "";
    for await (const chunk of req) raw += chunk;
    return raw;
  }

  async function token(req: http.IncomingMessage, res: http.ServerResponse) {
    const form = new URLSearchParams(await bodyOf(req));
    const record = (r: TokenRequest) => provider.tokenRequests.push(r);
    if (provider.tokenEndpointDown) return json(res, 503, { error: "temporarily_unavailable" });

    // client_secret_basic (form-encoded id and secret, RFC 6749 2.3.1) or client_secret_post
    let id = form.get("client_id");
    let secret = form.get("client_secret");
    const basic = /^Basic (.+)$/.exec(req.headers.authorization ?? "");
    if (basic) {
      const [user, pass] = Buffer.from(basic[1], "base64").toString().split(":");
      id = decodeURIComponent(user.replace(/\+/g, " "));
      secret = decodeURIComponent((pass ?? "").replace(/\+/g, " "));
    }
    const clientAuthenticated = id === provider.clientId && secret === provider.clientSecret;
    const redirectUri = form.get("redirect_uri");
    const code = form.get("code") ?? "";
    const pending = codes.get(code);
    const verifier = form.get("code_verifier") ?? "";
    const verifierMatched = !!pending && crypto.createHash("sha256").update(verifier).digest("base64url") === pending.challenge;
    const base = { clientAuthenticated, verifierMatched, redirectUri };
    if (!clientAuthenticated) {
      record({ ...base, outcome: "invalid_client" });
      return json(res, 401, { error: "invalid_client" }, { "www-authenticate": 'Basic realm="token"' });
    }
    if (form.get("grant_type") !== "authorization_code") {
      record({ ...base, outcome: "invalid_request" });
      return json(res, 400, { error: "unsupported_grant_type" });
    }
    if (!pending || pending.used || pending.redirectUri !== redirectUri || !verifierMatched) {
      if (pending) pending.used = true; // a code presented wrongly is spent (RFC 6749 4.1.2)
      record({ ...base, outcome: "invalid_grant" });
      return json(res, 400, { error: "invalid_grant" });
    }
    pending.used = true;
    record({ ...base, outcome: "issued" });

    const u = pending.user;
    let claims: Record<string, unknown> = {
      email: u.email,
      email_verified: u.emailVerified ?? true,
      name: u.name ?? "Provider User",
      groups: u.groups ?? [],
      ...(pending.nonce ? { nonce: pending.nonce } : {}),
    };
    if (provider.tamper) claims = provider.tamper(claims);
    const idToken = await new SignJWT(claims)
      .setProtectedHeader({ alg: "RS256", kid })
      .setIssuer(issuer)
      .setAudience(provider.clientId)
      .setSubject(u.sub)
      .setIssuedAt()
      .setExpirationTime("5m")
      .sign(privateKey);
    provider.idTokensIssued.push(idToken);
    json(res, 200, { access_token: crypto.randomBytes(24).toString("base64url"), token_type: "Bearer", expires_in: 300, id_token: idToken, scope: "openid email profile" });
  }

  return provider;
}
