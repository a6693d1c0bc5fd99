// Pure rules of the configuration console: the order of precedence layers are listed in, the
// words for their kinds, and which form field an API refusal is about. Unit-tested beside it.

export type LayerKind = "organization" | "selector" | "device";

export const KIND_LABELS: Record<LayerKind, string> = {
  organization: "Organization default",
  selector: "Selector",
  device: "Device override",
};

const KIND_RANK: Record<LayerKind, number> = { organization: 0, selector: 1, device: 2 };

/** Lowest precedence first: the default, selector layers by order (then name), device overrides by name. */
export function precedenceOrder<L extends { kind: LayerKind; order: number | null; name: string }>(layers: readonly L[]): L[] {
  return [...layers].sort((a, b) => KIND_RANK[a.kind] - KIND_RANK[b.kind] || (a.order ?? 0) - (b.order ?? 0) || a.name.localeCompare(b.name));
}

const CREATE_FIELDS = ["name", "kind", "selector", "order", "deviceId", "description"];

/**
 * The create form's field a refusal names: a 400's issue path (`["name"]`), or a 409's message
 * that begins with the field (`name: a layer named "x" exists`, `deviceId: the device has ...`).
 */
export function createFieldOf(message: string, path?: readonly (string | number)[]): string | null {
  const first = path?.[0];
  if (typeof first === "string") return CREATE_FIELDS.includes(first) ? first : null;
  const named = /^([A-Za-z]+):/.exec(message)?.[1];
  return named && CREATE_FIELDS.includes(named) ? named : null;
}

/**
 * The editor's field a refusal of a save names, from the issue path: `["files", "2", "path"]` is
 * the third file given, which is the editor's row `sent[2]` (blank rows are not sent).
 */
export function contentFieldOf(sent: { files: number[]; variables: number[] }) {
  return (_message: string, path?: readonly (string | number)[]): string | null => {
    if (!path?.length) return null;
    const [list, at, field] = path;
    // the API answers every path segment as a string ("files", "2", "path")
    const index = Number(at);
    if (list === "files" && Number.isInteger(index)) return `files.${sent.files[index] ?? index}.${field ?? "path"}`;
    if (list === "comment") return "comment";
    if (list === "activation") return "activation";
    return null;
  };
}
