// A layer's content as the editor holds it (rows people add, change and remove) and the PATCH
// body it becomes: variables and files replace the whole set, secrets name only what changes
// (a value typed replaces it, a removal is null), so a secret is never typed again to keep it
// (docs/configuration.md, "Content"). Pure, unit-tested beside it.

export interface VariableRow { name: string; value: string }
export interface FileRow {
  path: string;
  /** text content; null for a binary file, which the editor keeps as it is */
  content: string | null;
  contentBase64: string | null;
  mode: string;
  owner: string;
  template: boolean;
}
/** a secret set in the layer (value never known here) or a new one; `value` replaces it when not empty */
export interface SecretRow { name: string; stored: boolean; value: string; removed: boolean }

export interface LayerDraft {
  variables: VariableRow[];
  files: FileRow[];
  secrets: SecretRow[];
  /** the activation command as typed, argv separated by spaces; empty: none */
  activation: string;
}

/** The content of a revision as the API answers it (a layer's `content`). */
export interface RevisionContent {
  variables: Record<string, string>;
  files: { path: string; mode: string; owner: string | null; template: boolean; binary: boolean; content: string | null; contentBase64: string | null }[];
  secretNames: string[];
  activation: { command: string[] } | null;
}

export function draftOf(content: RevisionContent): LayerDraft {
  return {
    variables: Object.entries(content.variables).map(([name, value]) => ({ name, value })),
    files: content.files.map((f) => ({
      path: f.path, content: f.binary ? null : (f.content ?? ""), contentBase64: f.binary ? f.contentBase64 : null,
      mode: f.mode, owner: f.owner ?? "", template: f.template,
    })),
    secrets: content.secretNames.map((name) => ({ name, stored: true, value: "", removed: false })),
    activation: content.activation?.command.join(" ") ?? "",
  };
}

export interface ContentPatch {
  variables?: Record<string, string>;
  files?: { path: string; content?: string; contentBase64?: string; mode: string; owner?: string; template: boolean }[];
  secrets?: Record<string, string | null>;
  activation?: { command: string[] } | null;
}

/** Blank rows (no name, no path) are left out: a row added and never filled in is no change. */
export function patchOf(draft: LayerDraft, before: RevisionContent): ContentPatch {
  const variables = Object.fromEntries(draft.variables.filter((v) => v.name.trim() !== "").map((v) => [v.name.trim(), v.value]));
  const files = draft.files.filter((f) => f.path.trim() !== "").map((f) => ({
    path: f.path.trim(),
    ...(f.content !== null ? { content: f.content } : { contentBase64: f.contentBase64 ?? "" }),
    mode: f.mode.trim() || "0644",
    ...(f.owner.trim() ? { owner: f.owner.trim() } : {}),
    template: f.template,
  }));
  const secrets: Record<string, string | null> = {};
  for (const s of draft.secrets) {
    const name = s.name.trim();
    if (!name) continue;
    if (s.removed) {
      if (s.stored) secrets[name] = null;
    } else if (s.value !== "") secrets[name] = s.value;
  }
  const command = argvOf(draft.activation);
  const patch: ContentPatch = { variables, files };
  if (Object.keys(secrets).length) patch.secrets = secrets;
  const activationBefore = before.activation?.command.join("\u0000") ?? "";
  if (command.join("\u0000") !== activationBefore) patch.activation = command.length ? { command } : null;
  return patch;
}

/** The command as typed, split on spaces (no shell: the agent runs it as an argument list). */
export function argvOf(text: string): string[] {
  return text.trim().split(/\s+/).filter(Boolean);
}

/** Whether saving would change anything: a revision with nothing new is not offered. */
export function draftChanged(draft: LayerDraft, before: RevisionContent): boolean {
  const patch = patchOf(draft, before);
  if (patch.secrets || patch.activation !== undefined) return true;
  const same = JSON.stringify(patchOf(draftOf(before), before));
  return JSON.stringify({ ...patch }) !== same;
}

/** `<list>.<row>.<field>` for each row whose key is a repeat of an earlier row's (blank keys are no rows yet). */
function repeats(rows: readonly { key: string }[], list: string, field: string): Record<string, string> {
  const seen = new Set<string>();
  const problems: Record<string, string> = {};
  rows.forEach(({ key }, i) => {
    const k = key.trim();
    if (!k) return;
    if (seen.has(k)) problems[`${list}.${i}.${field}`] = `${k} is given twice`;
    seen.add(k);
  });
  return problems;
}

/** Problems the editor shows at their row before the API is asked (the API checks everything again). */
export function draftProblems(draft: LayerDraft): Record<string, string> {
  const problems: Record<string, string> = {
    ...repeats(draft.variables.map((v) => ({ key: v.name })), "variables", "name"),
    ...repeats(draft.files.map((f) => ({ key: f.path })), "files", "path"),
    ...repeats(draft.secrets.map((s) => ({ key: s.name })), "secrets", "name"),
  };
  draft.secrets.forEach((s, i) => {
    if (s.name.trim() && !s.stored && !s.removed && s.value === "") problems[`secrets.${i}.value`] = "a new secret needs a value";
  });
  return problems;
}
