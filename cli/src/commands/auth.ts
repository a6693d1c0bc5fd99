// fleet login / logout / context: signing in to servers and organizations, and switching
// between them. A password session is POST /auth/login (bearer access token and refresh
// token, in the organization asked for with --org); an API key is checked with GET
// /tenant/context before it is saved. Nothing is ever asked when stdin is not a terminal.
// `--web` (and, with no credential given, the default where a browser can be opened and the
// server offers its OpenID Connect provider) signs in through the browser: ./web-login.ts.
import readline from "node:readline";
import { Writable } from "node:stream";
import type { Command } from "commander";
import { ApiClient } from "../client.js";
import { configPath, readConfig, resolveContext, updateConfig, type Context } from "../config.js";
import { CliError, EXIT } from "../errors.js";
import { findOrganization, print, readStdin, type Globals } from "../runtime.js";
import { table } from "../output.js";
import type { Io } from "../main.js";
import { browserCommand, browserSignIn } from "./web-login.js";

interface TenantContext {
  credential: "session" | "api_key";
  email: string;
  organization: { id: string; slug: string; name: string };
  role: string | null;
}

async function ask(io: Io, question: string, hidden = false): Promise<string> {
  let muted = false;
  const output = new Writable({
    write(chunk, _enc, done) {
      if (!muted) io.stderr.write(chunk);
      done();
    },
  });
  const rl = readline.createInterface({ input: io.stdin, output, terminal: true });
  try {
    const answer = new Promise<string>((resolve) => rl.question(question, resolve));
    muted = hidden;
    const text = await answer;
    if (hidden) io.stderr.write("\n");
    return text.trim();
  } finally {
    rl.close();
  }
}

function contextName(server: string, org: string): string {
  return `${new URL(server).host}/${org}`;
}

export async function login(args: unknown[], globals: Globals, io: Io, cmd: Command): Promise<void> {
  const server = String(args[0]).replace(/\/+$/, "");
  if (!/^https?:\/\//.test(server)) throw new CliError(EXIT.usage, `login takes the service's address (http:// or https://), not "${server}"`);
  const opts = cmd.opts<{ email?: string; passwordStdin?: boolean; apiKey?: string; name?: string; web?: boolean; browser?: boolean }>();
  const interactive = Boolean(io.stdin.isTTY);
  const web = Boolean(opts.web) || opts.browser === false;
  if (web && (opts.email || opts.passwordStdin || opts.apiKey)) throw new CliError(EXIT.usage, "--web signs in through the browser: it takes no --email, --password-stdin or --api-key");
  const apiKey = web ? undefined : opts.apiKey ?? io.env.FLEET_API_KEY;
  let context: Context = { server };
  if (apiKey) {
    context.apiKey = apiKey;
  } else if (web || (await browserByDefault(server, opts, io))) {
    const tokens = await browserSignIn(server, io, { openBrowser: opts.browser !== false });
    context = { server, accessToken: tokens.accessToken, refreshToken: tokens.refreshToken, expiresAt: tokens.expiresAt };
  } else {
    const email = opts.email ?? io.env.FLEET_EMAIL ?? (interactive ? await ask(io, "E-mail: ") : undefined);
    if (!email) throw new CliError(EXIT.usage, "no e-mail address: give --email (or FLEET_EMAIL), or --api-key; nothing is asked when stdin is not a terminal");
    const password = opts.passwordStdin ? (await readStdin(io)).replace(/\r?\n$/, "") : io.env.FLEET_PASSWORD ?? (interactive ? await ask(io, "Password: ", true) : undefined);
    if (!password) throw new CliError(EXIT.usage, "no password: give --password-stdin or FLEET_PASSWORD; nothing is asked when stdin is not a terminal");
    const anonymous = new ApiClient({ server });
    const tokens = await anonymous.request<{ accessToken: string; refreshToken: string; expiresAt: string }>("POST", "/auth/login", { body: { email, password } });
    context = { server, user: email, accessToken: tokens.accessToken, refreshToken: tokens.refreshToken, expiresAt: tokens.expiresAt };
  }
  const client = new ApiClient(context);
  if (globals.org && !apiKey) {
    const org = await findOrganization(client, globals.org);
    await client.request("POST", "/auth/session/organization", { body: { organizationId: org.id } });
  }
  const me = await client.request<TenantContext>("GET", "/tenant/context");
  if (globals.org && apiKey && ![me.organization.slug, me.organization.id, me.organization.name].includes(globals.org)) {
    throw new CliError(EXIT.usage, `this API key acts in ${me.organization.slug}, not ${globals.org}`);
  }
  context.user = me.email;
  context.organization = { id: me.organization.id, slug: me.organization.slug, name: me.organization.name };
  const name = opts.name ?? contextName(server, me.organization.slug);
  updateConfig((config) => {
    config.contexts[name] = context;
    config.currentContext = name;
  }, io.env);
  io.stderr.write(`Signed in to ${server} as ${me.email} in ${me.organization.slug}${me.role ? ` (${me.role})` : ""}; context "${name}" saved in ${configPath(io.env)}\n`);
}

/**
 * Without --web: the browser sign-in when no e-mail or password is given, a browser can be
 * opened here, and the server offers its OpenID Connect provider (GET /auth/providers).
 */
async function browserByDefault(server: string, opts: { email?: string; passwordStdin?: boolean }, io: Io): Promise<boolean> {
  if (opts.email || opts.passwordStdin || io.env.FLEET_EMAIL || io.env.FLEET_PASSWORD || !browserCommand(io.env, server)) return false;
  const offered = await new ApiClient({ server }).request<{ oidc?: { name: string } | null }>("GET", "/auth/providers").catch(() => null);
  return Boolean(offered?.oidc);
}

export async function logout(_args: unknown[], globals: Globals, io: Io, cmd: Command): Promise<void> {
  const config = readConfig(io.env);
  const names = cmd.opts().all ? Object.keys(config.contexts) : [resolveContext(config, globals.context, io.env).name];
  for (const name of names) {
    const context = config.contexts[name];
    if (!context) throw new CliError(EXIT.usage, "FLEET_URL/FLEET_API_KEY come from the environment: unset them to sign out");
    if (context.accessToken) {
      // the session ends at the server: its access and refresh tokens stop working (an expired
      // access token is refreshed first, within the same session)
      await new ApiClient(context).request("POST", "/auth/logout", { body: {} }).catch((err: unknown) => {
        if (!(err instanceof CliError && err.exitCode === EXIT.auth)) throw err;
      });
      io.stderr.write(`Signed out of ${context.server} (${name}): the session was revoked\n`);
    } else if (context.apiKey) {
      io.stderr.write(`Forgot the API key of ${name} (the key itself stays valid: revoke it with fleet api-keys revoke)\n`);
    }
  }
  updateConfig((saved) => {
    for (const name of names) {
      delete saved.contexts[name];
      if (saved.currentContext === name) saved.currentContext = undefined;
    }
  }, io.env);
}

export async function contextList(_args: unknown[], globals: Globals, io: Io): Promise<void> {
  const config = readConfig(io.env);
  const rows = Object.entries(config.contexts).map(([name, c]) => ({
    current: name === config.currentContext, name, server: c.server, organization: c.organization?.slug ?? "", user: c.user ?? "", credential: c.apiKey ? "api key" : "session",
  }));
  if ((globals.output ?? (io.stdout.isTTY ? "table" : "json")) !== "table") return print(io, globals, rows);
  if (!rows.length) return void io.stdout.write("No contexts: fleet login URL\n");
  io.stdout.write(table([["CURRENT", "NAME", "SERVER", "ORGANIZATION", "USER", "CREDENTIAL"], ...rows.map((r) => [r.current ? "*" : "", r.name, r.server, r.organization, r.user, r.credential])]));
}

export async function contextCurrent(_args: unknown[], globals: Globals, io: Io): Promise<void> {
  const config = readConfig(io.env);
  const resolved = resolveContext(config, globals.context, io.env);
  const me = await new ApiClient(resolved.context).request<TenantContext>("GET", "/tenant/context");
  print(io, globals, { context: resolved.name, server: resolved.context.server, user: me.email, organization: me.organization.slug, role: me.role, credential: me.credential });
}

export async function contextUse(args: unknown[], _globals: Globals, io: Io): Promise<void> {
  const name = String(args[0]);
  const config = updateConfig((saved) => {
    if (!saved.contexts[name]) throw new CliError(EXIT.usage, `no context named ${name} (${Object.keys(saved.contexts).join(", ") || "none: fleet login URL"})`);
    saved.currentContext = name;
  }, io.env);
  io.stderr.write(`Using context "${name}" (${config.contexts[name].server}, ${config.contexts[name].organization?.slug ?? "?"})\n`);
}

export async function contextDelete(args: unknown[], _globals: Globals, io: Io): Promise<void> {
  const name = String(args[0]);
  updateConfig((saved) => {
    if (!saved.contexts[name]) throw new CliError(EXIT.usage, `no context named ${name}`);
    delete saved.contexts[name];
    if (saved.currentContext === name) saved.currentContext = undefined;
  }, io.env);
}
