// What every command that talks to a server shares: the context it runs in (with --org
// applied), the client, and printing in the chosen format.
import readline from "node:readline";
import { ApiClient } from "./client.js";
import { readConfig, resolveContext, updateConfig, type Config, type Context, type Resolved } from "./config.js";
import { CliError, EXIT } from "./errors.js";
import { render, type Format } from "./output.js";
import type { Io } from "./main.js";

export interface Globals {
  output?: Format;
  context?: string;
  org?: string;
  [flag: string]: unknown;
}

export interface Session {
  client: ApiClient;
  resolved: Resolved;
  config: Config;
}

/** Saves a stored context (tokens refreshed, organization switched). */
export function saveContext(io: Io, name: string, context: Context): void {
  updateConfig((config) => {
    config.contexts[name] = context;
  }, io.env);
}

export async function connect(globals: Globals, io: Io): Promise<Session> {
  const config = readConfig(io.env);
  const resolved = resolveContext(config, globals.context, io.env);
  const client = new ApiClient(
    resolved.context,
    (context) => {
      if (resolved.stored) saveContext(io, resolved.name, context);
    },
    () => (resolved.stored ? readConfig(io.env).contexts[resolved.name] : undefined),
  );
  if (globals.org) await actIn(client, resolved, globals.org, io);
  return { client, resolved, config };
}

interface Org {
  id: string;
  slug: string;
  name: string;
}

/** An organization of GET /tenant/accessible: the caller's role there (null: a Super Admin who is not a member). */
interface AccessibleOrg extends Org {
  role: string | null;
  isCurrent: boolean;
}

/** The organization `wanted` (slug, name or id) names among those the caller may act in (GET /tenant/accessible). */
export async function findOrganization(client: ApiClient, wanted: string): Promise<AccessibleOrg> {
  const { items } = await client.all<AccessibleOrg>("/tenant/accessible"); // every page: a Super Admin sees every organization
  const org = items.find((o) => o.id === wanted || o.slug === wanted) ?? items.find((o) => o.name === wanted);
  if (!org) {
    const yours = items.length > 10 ? `${items.slice(0, 10).map((o) => o.slug).join(", ")}, ... ${items.length - 10} more` : items.map((o) => o.slug).join(", ") || "none";
    throw new CliError(EXIT.notFound, `no organization "${wanted}" among yours (${yours})`);
  }
  return org;
}

/**
 * --org: a session acts in another of the user's organizations (POST /auth/session/organization,
 * for as long as the session lives, so the context remembers it); an API key belongs to one
 * organization and cannot leave it.
 */
export async function actIn(client: ApiClient, resolved: Resolved, wanted: string, io: Io): Promise<void> {
  const current = resolved.context.organization;
  if (current && (current.slug === wanted || current.id === wanted || current.name === wanted)) return;
  const org = await findOrganization(client, wanted);
  if (current?.id === org.id) return;
  if (client.context.apiKey) {
    const me = await client.request<{ organization: Org }>("GET", "/tenant/context");
    if (me.organization.id === org.id) return;
    throw new CliError(EXIT.usage, `an API key acts in its own organization (${me.organization.slug}); --org ${wanted} needs a context signed in with a password, or a key of ${org.slug}`);
  }
  const here = { id: org.id, slug: org.slug, name: org.name };
  if (org.role === null) {
    // a Super Admin sees every organization, but enters one they are not a member of only by a tenant switch
    if (org.isCurrent) {
      resolved.context.organization = here; // switched there already: for this command (the switch ends by itself)
      return;
    }
    throw new CliError(EXIT.usage, `you are not a member of ${org.slug}: a Super Admin enters it with the time-bound, audited ` +
      `fleet tenant switch --organization-id ${org.id} (then leave out --org; fleet tenant return ends it)`);
  }
  await client.request("POST", "/auth/session/organization", { body: { organizationId: org.id } });
  resolved.context.organization = here;
  if (resolved.stored) saveContext(io, resolved.name, resolved.context);
}

export function formatOf(globals: Globals, io: Io): Format {
  return globals.output ?? (io.stdout.isTTY ? "table" : "json");
}

export function print(io: Io, globals: Globals, data: unknown): void {
  io.stdout.write(render(data, formatOf(globals, io)));
}

/** A y/N question on stderr, answered on stdin (a terminal). */
async function confirm(io: Io, question: string): Promise<boolean> {
  const rl = readline.createInterface({ input: io.stdin, output: io.stderr as NodeJS.WritableStream, terminal: true });
  try {
    const answer = await new Promise<string>((resolve) => rl.question(question, resolve));
    return /^y(es)?$/i.test(answer.trim());
  } finally {
    rl.close();
  }
}

/**
 * Consent to a destructive step: --yes, or "y" to `question` on a terminal. Off a terminal
 * without --yes it exits 2 saying that `what` needs --yes (nothing is done). False: declined.
 */
export async function consent(io: Io, yes: boolean | undefined, question: string, what: string): Promise<boolean> {
  if (yes) return true;
  if (!io.stdin.isTTY) throw new CliError(EXIT.usage, `${what} needs --yes when stdin is not a terminal`);
  return confirm(io, question);
}

/** Reads all of stdin as text. */
export async function readStdin(io: Io): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of io.stdin) chunks.push(Buffer.from(chunk as Buffer));
  return Buffer.concat(chunks).toString("utf8");
}

/** A duration like 30s, 10m, 2h, 1d in milliseconds. */
export function durationMs(text: string, flag: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)?$/.exec(text.trim());
  if (!m) throw new CliError(EXIT.usage, `${flag} takes a duration like 30s, 10m, 2h or 1d, not "${text}"`);
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[m[2] ?? "s"]!;
  return Number(m[1]) * unit;
}

/** `key=value` pairs (as given to --selector, --set) as an object. */
export function pairs(values: string[] | undefined, flag: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const value of values ?? []) {
    const at = value.indexOf("=");
    if (at <= 0) throw new CliError(EXIT.usage, `${flag} takes key=value, not "${value}"`);
    out[value.slice(0, at)] = value.slice(at + 1);
  }
  return out;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const isUuid = (text: string) => UUID.test(text);

/** The id of the resource `wanted` names: itself when it is an id, else the one item of `listPath?search=` with that name. */
export async function idByName(client: ApiClient, listPath: string, wanted: string, what: string, searchParam = "search"): Promise<string> {
  if (isUuid(wanted)) return wanted;
  const page = await client.request<{ items: Array<{ id: string; name?: string; key?: string }> }>("GET", listPath, { query: { [searchParam]: wanted, limit: 200 } });
  const hits = page.items.filter((i) => i.name === wanted || i.key === wanted);
  if (hits.length === 1) return hits[0].id;
  if (hits.length > 1) throw new CliError(EXIT.usage, `${hits.length} ${what}s are named "${wanted}": give the id`);
  throw new CliError(EXIT.notFound, `no ${what} named "${wanted}"`);
}

/** Resolves when `ms` passed or `signal` aborted. */
export function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => {
      clearTimeout(timer);
      resolve();
    }, { once: true });
  });
}
