// Fleet-as-code documents (docs/config-as-code.md): YAML files of one or more documents
// `{ apiVersion: fleet.app/v1, kind, metadata: { name }, spec }`. Parsing keeps each node's
// line, so a refusal names the file and the line of the field it is about.
import { LineCounter, parseAllDocuments, isMap, type Document, type Node } from "yaml";

export const API_VERSION = "fleet.app/v1";
export const KINDS = ["NotificationTarget", "AlertRule", "Role", "GitRegistry", "OciRegistry", "ConfigLayer", "Deployment"] as const;
export type Kind = (typeof KINDS)[number];

export interface SourceFile {
  path: string;
  content: string;
}

/** A document that passed the envelope checks; its spec is still the API's to judge. */
export interface ParsedDocument {
  file: string;
  /** line of the document's first node */
  line: number;
  kind: Kind;
  name: string;
  spec: Record<string, unknown>;
  /** the line of a field of the spec (a path into it), or of its nearest ancestor */
  lineOf(path: ReadonlyArray<PropertyKey>): number;
}

/** A document (or file) refused before it reached the API's schemas. */
export interface DocumentRefusal {
  file: string;
  line: number;
  kind: string | null;
  name: string | null;
  message: string;
}

const NAME = /^[A-Za-z0-9][A-Za-z0-9 ._-]{0,199}$/;

function nodeLine(lines: LineCounter, node: Node | null | undefined): number | null {
  const offset = node?.range?.[0];
  return offset === undefined ? null : lines.linePos(offset).line;
}

/** Every document of every file, or why it is refused. Files are read in the order given. */
export function parseFiles(files: SourceFile[]): { documents: ParsedDocument[]; refusals: DocumentRefusal[] } {
  const documents: ParsedDocument[] = [];
  const refusals: DocumentRefusal[] = [];
  for (const file of files) {
    const lines = new LineCounter();
    let docs: Document.Parsed[];
    try {
      docs = parseAllDocuments(file.content, { lineCounter: lines, uniqueKeys: true, prettyErrors: false }) as Document.Parsed[];
    } catch (err) {
      refusals.push({ file: file.path, line: 1, kind: null, name: null, message: `not YAML: ${(err as Error).message}` });
      continue;
    }
    if (!Array.isArray(docs)) docs = [docs];
    for (const doc of docs) {
      const start = nodeLine(lines, doc.contents) ?? (doc.range ? lines.linePos(doc.range[0]).line : 1);
      const refuse = (message: string, line = start, kind: string | null = null, name: string | null = null) =>
        refusals.push({ file: file.path, line, kind, name, message });
      if (doc.errors.length > 0) {
        const error = doc.errors[0]!;
        refuse(`not valid YAML: ${error.message.split("\n")[0]}`, error.linePos?.[0]?.line ?? start);
        continue;
      }
      if (doc.contents === null) continue; // an empty document (a trailing ---, a comment)
      if (!isMap(doc.contents)) {
        refuse("a document is a mapping of apiVersion, kind, metadata and spec");
        continue;
      }
      const lineAt = (path: ReadonlyArray<PropertyKey>) => {
        for (let n = path.length; n >= 0; n--) {
          const line = nodeLine(lines, doc.getIn(path.slice(0, n) as unknown[], true) as Node | undefined);
          if (line !== null) return line;
        }
        return start;
      };
      const value = doc.toJS({ maxAliasCount: 50 }) as Record<string, unknown>;
      const kind = typeof value.kind === "string" ? value.kind : null;
      const metadata = value.metadata;
      const name = metadata && typeof metadata === "object" && typeof (metadata as Record<string, unknown>).name === "string"
        ? ((metadata as Record<string, unknown>).name as string) : null;
      const unknownKey = Object.keys(value).find((k) => !["apiVersion", "kind", "metadata", "spec"].includes(k));
      if (value.apiVersion !== API_VERSION) refuse(`apiVersion: must be ${API_VERSION}`, lineAt(["apiVersion"]), kind, name);
      else if (!kind || !(KINDS as readonly string[]).includes(kind)) refuse(`kind: must be one of ${KINDS.join(", ")}`, lineAt(["kind"]), kind, name);
      else if (unknownKey) refuse(`${unknownKey}: unknown field (a document has apiVersion, kind, metadata and spec)`, lineAt([unknownKey]), kind, name);
      else if (!name || !NAME.test(name) || name !== name.trim()) {
        refuse("metadata.name: required: letters, digits, space, '.', '_' or '-', at most 200 characters", lineAt(["metadata", "name"]), kind, name);
      } else if (Object.keys(metadata as object).some((k) => k !== "name")) {
        const extra = Object.keys(metadata as object).find((k) => k !== "name")!;
        refuse(`metadata.${extra}: unknown field (metadata has a name only)`, lineAt(["metadata", extra]), kind, name);
      } else if (!value.spec || typeof value.spec !== "object" || Array.isArray(value.spec)) refuse("spec: required: a mapping", lineAt(["spec"]), kind, name);
      else {
        documents.push({ file: file.path, line: start, kind: kind as Kind, name, spec: value.spec as Record<string, unknown>, lineOf: (path) => lineAt(["spec", ...path]) });
      }
    }
  }
  // A kind and name is one resource: the second document naming it is refused.
  const seen = new Map<string, ParsedDocument>();
  const unique: ParsedDocument[] = [];
  for (const doc of documents) {
    const key = `${doc.kind}\u0000${doc.name}`;
    const first = seen.get(key);
    if (first) refusals.push({ file: doc.file, line: doc.line, kind: doc.kind, name: doc.name, message: `${doc.kind} "${doc.name}" is also declared in ${first.file}:${first.line}` });
    else {
      seen.set(key, doc);
      unique.push(doc);
    }
  }
  return { documents: unique, refusals };
}
