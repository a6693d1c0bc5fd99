// `fleet login URL --web`: signing in through the browser, for people who sign in only with the
// service's OpenID Connect provider. OAuth 2.0 for Native Apps (RFC 8252) with PKCE (RFC 7636):
// the CLI listens on a loopback port of its own (http://127.0.0.1:<ephemeral>/callback), opens
// the system browser (and prints the address, for a machine without one) on the service's
// GET /auth/oidc/authorize with that redirect_uri, the S256 challenge of a fresh verifier and a
// random state; the service signs the browser in at the provider and sends it back to the
// loopback address with a one-time code and the state. The CLI takes only an answer carrying its
// own state (a page of another site cannot feed it a code: CSRF), and exchanges the code with the
// verifier at POST /auth/oidc/token for the same access and refresh tokens as a password sign-in.
import { spawn } from "node:child_process";
import crypto from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { ApiClient } from "../client.js";
import { CliError, EXIT } from "../errors.js";
import type { Io } from "../main.js";

export interface Tokens {
  accessToken: string;
  refreshToken: string;
  expiresAt: string;
}

/** How long the CLI waits for the browser to come back. */
const WAIT_MS = 5 * 60_000;

/** Why the service sent the browser back without a code (its `error`), in a sentence. */
const REFUSALS: Record<string, string> = {
  not_configured: "the service has no OpenID Connect sign-in configured (sign in with --email or --api-key)",
  denied: "the provider refused the sign-in (access denied)",
  provider_error: "the provider answered with an error",
  unavailable: "the service cannot reach the provider; try again later",
  invalid_response: "the provider's answer failed the service's checks",
  user_disabled: "the account is disabled",
  account_conflict: "the provider's e-mail address belongs to an account linked to another identity",
  no_email: "the provider gave no verified e-mail address",
  state_used: "the sign-in attempt was already used",
  state_expired: "the sign-in took too long",
};

const base64url = (bytes: Buffer) => bytes.toString("base64url");

/**
 * The command that opens `url` in the system browser, or null when there is none to open:
 * $BROWSER (`%s` stands for the address, else it is appended), `open` on macOS, the URL handler
 * on Windows, `xdg-open` in a desktop session (DISPLAY or WAYLAND_DISPLAY) elsewhere.
 */
export function browserCommand(env: NodeJS.ProcessEnv, url: string, platform: NodeJS.Platform = process.platform): [string, string[]] | null {
  if (env.BROWSER) {
    const [command, ...args] = env.BROWSER.trim().split(/\s+/);
    return [command, args.some((a) => a.includes("%s")) ? args.map((a) => a.replaceAll("%s", url)) : [...args, url]];
  }
  if (platform === "darwin") return ["open", [url]];
  if (platform === "win32") return ["rundll32", ["url.dll,FileProtocolHandler", url]];
  if (env.DISPLAY || env.WAYLAND_DISPLAY) return ["xdg-open", [url]];
  return null;
}

function openBrowser(command: [string, string[]]): void {
  try {
    const child = spawn(command[0], command[1], { stdio: "ignore", detached: true });
    child.on("error", () => {}); // the address is printed anyway
    child.unref();
  } catch {
    /* the address is printed anyway */
  }
}

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function page(res: http.ServerResponse, status: number, title: string, text: string): void {
  const body = `<!doctype html><html lang="en"><head><meta charset="utf-8"><link rel="icon" href="data:,"><title>${escapeHtml(title)} - fleet</title></head><body><h1>${escapeHtml(title)}</h1><p>${escapeHtml(text)}</p></body></html>`;
  res.writeHead(status, { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" }).end(body);
}

/**
 * Signs in at `server` through the browser; answers the session's tokens. `openBrowser`
 * false (--no-browser) only prints the address.
 */
export async function browserSignIn(server: string, io: Io, options: { openBrowser: boolean }): Promise<Tokens> {
  const verifier = base64url(crypto.randomBytes(32));
  const challenge = base64url(crypto.createHash("sha256").update(verifier).digest());
  const state = base64url(crypto.randomBytes(32));
  const anonymous = new ApiClient({ server });

  const callback = http.createServer();
  await new Promise<void>((resolve, reject) => {
    callback.once("error", (err) => reject(new CliError(EXIT.error, `cannot listen on a loopback port for the browser's answer: ${err.message}`)));
    callback.listen(0, "127.0.0.1", resolve);
  });
  const redirectUri = `http://127.0.0.1:${(callback.address() as AddressInfo).port}/callback`;
  const authorize = new URL(anonymous.url("/auth/oidc/authorize"));
  for (const [k, v] of Object.entries({ redirect_uri: redirectUri, code_challenge: challenge, code_challenge_method: "S256", state })) authorize.searchParams.set(k, v);

  const answered = new Promise<Tokens>((resolve, reject) => {
    callback.on("request", (req, res) => {
      const url = new URL(req.url ?? "/", redirectUri);
      if (req.method !== "GET" || url.pathname !== "/callback") return void res.writeHead(404).end();
      // Only the answer to this sign-in: another page sending the browser here is ignored.
      if (url.searchParams.get("state") !== state) {
        io.stderr.write("Ignored an answer on the loopback callback that is not for this sign-in (state does not match)\n");
        return page(res, 400, "Not this sign-in", "This answer does not belong to the fleet login that is waiting (its state does not match). It was ignored.");
      }
      const error = url.searchParams.get("error");
      const code = url.searchParams.get("code");
      if (error !== null || !code) {
        const why = REFUSALS[error ?? ""] ?? `the service refused the sign-in (${error ?? "no code"})`;
        page(res, 400, "Sign-in failed", `${why}. You can close this tab.`);
        return reject(new CliError(EXIT.auth, `browser sign-in failed: ${why}`));
      }
      anonymous.request<Tokens>("POST", "/auth/oidc/token", { body: { code, codeVerifier: verifier, redirectUri } }).then(
        (tokens) => {
          page(res, 200, "Signed in", "fleet is signed in. You can close this tab and go back to the terminal.");
          resolve(tokens);
        },
        (err: unknown) => {
          page(res, 400, "Sign-in failed", "The service refused the sign-in code; see the terminal.");
          reject(err instanceof CliError && err.exitCode === EXIT.usage ? new CliError(EXIT.auth, `the service refused the sign-in code: ${err.message}`, err.details) : err);
        },
      );
    });
  });

  const command = options.openBrowser ? browserCommand(io.env, authorize.href) : null;
  io.stderr.write(command
    ? `Opening the browser to sign in; if it does not open, visit this address:\n  ${authorize.href}\n`
    : `Open this address in a browser on this machine to sign in:\n  ${authorize.href}\n`);
  if (command) openBrowser(command);
  io.stderr.write(`Waiting for the browser's answer on ${redirectUri} ...\n`);

  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new CliError(EXIT.auth, `no answer from the browser within ${WAIT_MS / 60_000} minutes`)), WAIT_MS);
  });
  try {
    return await Promise.race([answered, timeout]);
  } finally {
    clearTimeout(timer);
    callback.close();
    callback.closeAllConnections();
  }
}
