// fleet diff -f PATH / fleet apply -f PATH: the YAML documents under PATH (a file, or every
// *.yaml and *.yml below a directory) sent to POST /organizations/{orgId}/config/plan or
// .../apply (docs/config-as-code.md). diff changes nothing; apply is all or nothing, and a
// refused document exits 2 with the service's message naming file and line. A prune goes
// through the config sources' prune guard (the service's rule: --prune-limit, --prune-percent,
// --no-prune-guard), is planned first, and its deletions are confirmed on a terminal or need
// --yes. fleet config export [-d DIR]: the organization's resources as documents, one stream
// or one file per document, ready for fleet diff -f.
import fs from "node:fs";
import path from "node:path";
import type { Command } from "commander";
import { parseAllDocuments } from "yaml";
import { CliError, EXIT } from "../errors.js";
import { connect, consent, formatOf, print, type Globals, type Session } from "../runtime.js";
import type { Io } from "../main.js";

interface Entry {
  kind: string;
  name: string | null;
  action: "create" | "update" | "unchanged" | "delete" | "refused" | "exists_unmanaged";
  file: string | null;
  line: number | null;
  message: string | null;
  changes: Array<{ field: string; old: unknown; new: unknown }>;
  managedBy: string | null;
  status: string | null;
  pendingSecrets: string[];
}
interface PlanAnswer {
  applied: boolean;
  summary: Record<Entry["action"], number>;
  resources: Entry[];
}

/** The files to send, with their paths relative to the directory given (or the file's own name). */
export function readDocuments(target: string): Array<{ path: string; content: string }> {
  let stat: fs.Stats;
  try {
    stat = fs.statSync(target);
  } catch {
    throw new CliError(EXIT.usage, `-f ${target}: no such file or directory`);
  }
  if (stat.isFile()) return [{ path: path.basename(target), content: fs.readFileSync(target, "utf8") }];
  const found: string[] = [];
  const walk = (dir: string) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      if (entry.name.startsWith(".")) continue; // .git and other hidden folders
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.isFile() && /\.ya?ml$/i.test(entry.name)) found.push(full);
    }
  };
  walk(target);
  if (found.length === 0) throw new CliError(EXIT.usage, `-f ${target}: no *.yaml or *.yml files in it`);
  return found.map((file) => ({ path: path.relative(target, file).split(path.sep).join("/"), content: fs.readFileSync(file, "utf8") }));
}

const SIGN: Record<Entry["action"], string> = { create: "+", update: "~", unchanged: "=", delete: "-", refused: "!", exists_unmanaged: "?" };
const WORDS: Record<Entry["action"], string> = {
  create: "create", update: "update", unchanged: "unchanged", delete: "delete", refused: "refused", exists_unmanaged: "exists, not managed",
};
const short = (value: unknown) => {
  const text = JSON.stringify(value) ?? "null";
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
};

/** The plan as a person reads it: one line per resource, its changed fields below it, and the counts. */
export function renderPlan(answer: PlanAnswer, verb: string): string {
  const lines: string[] = [];
  for (const e of answer.resources) {
    const where = e.file ? ` (${e.file}${e.line ? `:${e.line}` : ""})` : "";
    const status = e.status === "pending secret" ? `  pending secret: ${e.pendingSecrets.join(", ")}` : "";
    lines.push(`${SIGN[e.action]} ${WORDS[e.action]} ${e.kind}/${e.name ?? "?"}${where}${status}`);
    for (const c of e.changes) lines.push(`    ${c.field}: ${short(c.old)} -> ${short(c.new)}`);
    if (e.message && (e.action === "refused" || e.action === "exists_unmanaged")) lines.push(`    ${e.message}`);
  }
  const s = answer.summary;
  lines.push(
    `${verb}: ${s.create} to create, ${s.update} to update, ${s.delete} to delete, ${s.unchanged} unchanged, ` +
    `${s.exists_unmanaged} not managed (adopt to take over), ${s.refused} refused.`,
  );
  return lines.join("\n");
}

/** The organization the command acts in: the context's (after --org), else the credential's own. */
async function organizationId({ client, resolved }: Session): Promise<string> {
  return resolved.context.organization?.id ?? (await client.request<{ organization: { id: string } }>("GET", "/tenant/context")).organization.id;
}

interface SendOptions {
  filename?: string;
  prune?: boolean;
  adopt?: boolean;
  commit?: string;
  pruneLimit?: string;
  prunePercent?: string;
  /** false with --no-prune-guard */
  pruneGuard?: boolean;
  yes?: boolean;
}

/** A config source's default limit (src/modules/config/sources.ts), and the one fleet apply --prune keeps to. */
export const DEFAULT_PRUNE_LIMIT = 10;

function wholeNumber(text: string, flag: string, max: number): number {
  const n = Number(text);
  if (!/^\d+$/.test(text.trim()) || n > max) throw new CliError(EXIT.usage, `${flag} takes a whole number from 0 to ${max}, not "${text}"`);
  return n;
}

/** The prune guard sent with a prune: the service refuses every deletion past it (nothing changes). */
function pruneGuardOf(opts: SendOptions): { pruneLimit: number | null; prunePercent: number | null } {
  if (opts.pruneGuard === false) {
    if (opts.pruneLimit !== undefined || opts.prunePercent !== undefined) throw new CliError(EXIT.usage, "--no-prune-guard lifts the guard: give it without --prune-limit and --prune-percent");
    return { pruneLimit: null, prunePercent: null };
  }
  return {
    pruneLimit: opts.pruneLimit === undefined ? DEFAULT_PRUNE_LIMIT : wholeNumber(opts.pruneLimit, "--prune-limit", 10_000),
    prunePercent: opts.prunePercent === undefined ? null : wholeNumber(opts.prunePercent, "--prune-percent", 100),
  };
}

const GUARD_HINT = "the prune guard refused every deletion (nothing changed): --prune-limit N or --prune-percent P raises it, --no-prune-guard lifts it";
const guardRefused = (answer: PlanAnswer) => answer.resources.some((e) => e.action === "refused" && e.file === null && e.message?.startsWith("prune would delete"));

function show(answer: PlanAnswer, verb: string, globals: Globals, io: Io) {
  if (formatOf(globals, io) === "table") io.stdout.write(`${renderPlan(answer, verb)}\n`);
  else print(io, globals, answer);
}

async function send(mode: "plan" | "apply", globals: Globals, io: Io, cmd: Command): Promise<number> {
  const opts = cmd.opts<SendOptions>();
  if (!opts.filename) throw new CliError(EXIT.usage, "-f PATH is required: a YAML file or a directory of them");
  const files = readDocuments(opts.filename);
  const body = {
    files, prune: Boolean(opts.prune), adopt: Boolean(opts.adopt), ...(opts.commit ? { commit: opts.commit } : {}),
    ...(opts.prune ? pruneGuardOf(opts) : {}),
  };
  const session = await connect(globals, io);
  const at = `/organizations/${encodeURIComponent(await organizationId(session))}/config`;
  if (mode === "apply" && opts.prune) {
    // what the prune deletes is shown and agreed to before anything is applied
    const plan = await session.client.request<PlanAnswer>("POST", `${at}/plan`, { body });
    if (plan.summary.refused > 0) {
      show(plan, "Plan", globals, io);
      io.stderr.write(`nothing applied: ${plan.summary.refused} refused${guardRefused(plan) ? `; ${GUARD_HINT}` : ""}\n`);
      return EXIT.usage;
    }
    const deletes = plan.resources.filter((e) => e.action === "delete");
    if (deletes.length > 0) {
      io.stderr.write(`${deletes.map((e) => `- delete ${e.kind}/${e.name}`).join("\n")}\n`);
      const count = `${deletes.length} resource${deletes.length === 1 ? "" : "s"}`;
      if (!(await consent(io, opts.yes, `Apply, deleting these ${count}? [y/N] `, `apply --prune deleting ${count}`))) {
        io.stderr.write("nothing applied\n");
        return EXIT.error;
      }
    }
  }
  const answer = await session.client.request<PlanAnswer>("POST", `${at}/${mode}`, { body });
  show(answer, mode === "plan" ? "Plan" : "Applied", globals, io);
  if (mode === "plan" && guardRefused(answer)) io.stderr.write(`${GUARD_HINT}\n`);
  // a plan with refused documents is an input the service refuses, as the apply would be
  return answer.summary.refused > 0 ? EXIT.usage : EXIT.ok;
}

export const diff = (_args: unknown[], globals: Globals, io: Io, cmd: Command) => send("plan", globals, io, cmd);
export const apply = (_args: unknown[], globals: Globals, io: Io, cmd: Command) => send("apply", globals, io, cmd);

interface ExportAnswer {
  documents: string;
  count: number;
  kinds: string[];
}

/** The folder of a kind in an export: OciRegistry -> oci-registries. */
function folderOf(kind: string): string {
  const words = kind.replace(/([a-z0-9])([A-Z])/g, "$1-$2").toLowerCase();
  return words.endsWith("y") ? `${words.slice(0, -1)}ies` : `${words}s`;
}

/** A file name for a resource's name: letters, digits, dot, dash and underscore; never hidden (fleet diff skips those). */
const fileNameOf = (name: string) => name.replace(/[^A-Za-z0-9._-]+/g, "-").replace(/^[.-]+/, "").slice(0, 100) || "document";

/** The export's stream as one file per document, `<kind folder>/<name>.yaml`, each keeping its comments. */
export function splitDocuments(stream: string): Array<{ path: string; content: string }> {
  const taken = new Set<string>();
  return parseAllDocuments(stream).map((doc) => {
    const kind = String(doc.get("kind") ?? "Document");
    const base = `${folderOf(kind)}/${fileNameOf(String(doc.getIn(["metadata", "name"]) ?? ""))}`;
    let file = `${base}.yaml`;
    for (let i = 2; taken.has(file.toLowerCase()); i++) file = `${base}-${i}.yaml`;
    taken.add(file.toLowerCase());
    return { path: file, content: doc.toString({ lineWidth: 0 }).replace(/^---\n/, "") }; // one document: no marker
  });
}

/**
 * fleet config export: the organization (--org, or the context's) as documents. Without -d, the
 * YAML stream (-o json|yaml: the service's answer); with -d DIR, one file per document in DIR,
 * which must be new or empty (a stale file would be applied again), ready for fleet diff -f DIR.
 */
export async function exportDocuments(_args: unknown[], globals: Globals, io: Io, cmd: Command): Promise<number> {
  const { dir } = cmd.opts<{ dir?: string }>();
  if (dir && fs.existsSync(dir) && (!fs.statSync(dir).isDirectory() || fs.readdirSync(dir).length > 0)) {
    throw new CliError(EXIT.usage, `-d ${dir}: not an empty folder; export into a new or empty one (a file left from before would be applied again)`);
  }
  const session = await connect(globals, io);
  const answer = await session.client.request<ExportAnswer>("GET", `/organizations/${encodeURIComponent(await organizationId(session))}/config/export`);
  const asData = globals.output === "json" || globals.output === "yaml";
  if (!dir) {
    if (asData) print(io, globals, answer);
    else io.stdout.write(answer.documents);
    return EXIT.ok;
  }
  const files = splitDocuments(answer.documents);
  for (const file of files) {
    const target = path.join(dir, ...file.path.split("/"));
    fs.mkdirSync(path.dirname(target), { recursive: true });
    fs.writeFileSync(target, file.content);
  }
  if (asData) print(io, globals, { directory: dir, files: files.map((f) => f.path), count: files.length });
  else io.stdout.write(files.map((f) => `${path.join(dir, f.path)}\n`).join(""));
  io.stderr.write(`${files.length} document${files.length === 1 ? "" : "s"} written to ${dir}; plan them with fleet diff -f ${dir}\n`);
  return EXIT.ok;
}
