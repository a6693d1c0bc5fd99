// fleet diff -f PATH / fleet apply -f PATH: the YAML documents under PATH (a file, or every
// *.yaml and *.yml below a directory) sent to POST /organizations/{orgId}/config/plan or
// .../apply (docs/config-as-code.md). diff changes nothing; apply is all or nothing, and a
// refused document exits 2 with the service's message naming file and line.
import fs from "node:fs";
import path from "node:path";
import type { Command } from "commander";
import { CliError, EXIT } from "../errors.js";
import { connect, formatOf, print, type Globals } from "../runtime.js";
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
    lines.push(`${SIGN[e.action]} ${e.action.replace("_", ", not ")} ${e.kind}/${e.name ?? "?"}${where}${status}`);
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

async function send(mode: "plan" | "apply", globals: Globals, io: Io, cmd: Command): Promise<number> {
  const opts = cmd.opts<{ filename?: string; prune?: boolean; adopt?: boolean; commit?: string }>();
  if (!opts.filename) throw new CliError(EXIT.usage, "-f PATH is required: a YAML file or a directory of them");
  const files = readDocuments(opts.filename);
  const { client, resolved } = await connect(globals, io);
  const orgId = resolved.context.organization?.id ?? (await client.request<{ organization: { id: string } }>("GET", "/tenant/context")).organization.id;
  const answer = await client.request<PlanAnswer>("POST", `/organizations/${encodeURIComponent(orgId)}/config/${mode}`, {
    body: { files, prune: Boolean(opts.prune), adopt: Boolean(opts.adopt), ...(opts.commit ? { commit: opts.commit } : {}) },
  });
  if (formatOf(globals, io) === "table") io.stdout.write(`${renderPlan(answer, mode === "plan" ? "Plan" : "Applied")}\n`);
  else print(io, globals, answer);
  // a plan with refused documents is an input the service refuses, as the apply would be
  return answer.summary.refused > 0 ? EXIT.usage : EXIT.ok;
}

export const diff = (_args: unknown[], globals: Globals, io: Io, cmd: Command) => send("plan", globals, io, cmd);
export const apply = (_args: unknown[], globals: Globals, io: Io, cmd: Command) => send("apply", globals, io, cmd);
