// Export (the organization's resources as documents) and the documents' JSON Schema, both
// derived from the kinds' own schemas (kinds.ts), so they cannot drift from the API.
import { z } from "zod";
import { Document } from "yaml";
import { can } from "../../trpc/principal.js";
import { API_VERSION } from "./documents.js";
import { HANDLERS, type Existing, type KindContext } from "./kinds.js";
import type { Kind } from "./documents.js";

/** The resources of every kind the caller may read, as one YAML stream; owner marks as comments. */
export async function exportDocuments(ctx: KindContext): Promise<{ documents: string; count: number; kinds: string[] }> {
  const readable = HANDLERS.filter((h) => can(ctx.principal, h.read));
  const existing = new Map<Kind, Existing[]>();
  for (const h of HANDLERS) existing.set(h.kind, readable.includes(h) ? await h.list(ctx) : []);
  const parts: string[] = [];
  for (const h of readable) {
    for (const r of existing.get(h.kind)!) {
      let spec: Record<string, unknown>;
      try {
        spec = h.normalize({ existing }, r.spec);
      } catch {
        spec = r.spec;
      }
      const doc = new Document({ apiVersion: API_VERSION, kind: h.kind, metadata: { name: r.name }, spec });
      const notes = [
        r.managedBy ? `managed by ${r.managedBy}${r.managedCommit ? ` at ${r.managedCommit}` : ""}` : null,
        r.pendingSecrets.length ? `pending secret: ${r.pendingSecrets.join(", ")} (set through the API)` : null,
      ].filter(Boolean);
      if (notes.length) doc.commentBefore = notes.map((n) => ` ${n}`).join("\n");
      parts.push(doc.toString({ lineWidth: 0 }));
    }
  }
  return { documents: parts.map((p) => `---\n${p}`).join(""), count: parts.length, kinds: readable.map((h) => h.kind) };
}

let schemaCache: Record<string, unknown> | null = null;

/** One JSON Schema for a document of any kind: the envelope, and each kind's spec from its create input. */
export function documentJsonSchema(): Record<string, unknown> {
  if (schemaCache) return schemaCache;
  const variants = HANDLERS.map((h) => {
    const { $schema: _s, ...spec } = z.toJSONSchema(h.schema, { io: "input", unrepresentable: "any", target: "draft-2020-12" }) as Record<string, unknown> & {
      properties?: Record<string, unknown>; required?: string[];
    };
    const properties = Object.fromEntries(Object.entries(spec.properties ?? {}).filter(([k]) => k !== "name" && !h.secretFields.includes(k)));
    // A rule names its targets by name (a NotificationTarget document beside it) or id.
    if (h.kind === "AlertRule") properties.targetIds = { type: "array", maxItems: 20, items: { type: "string" }, description: "notification targets, by name or id" };
    const required = (spec.required ?? []).filter((k) => k !== "name" && !h.secretFields.includes(k));
    return {
      type: "object",
      title: h.kind,
      additionalProperties: false,
      required: ["apiVersion", "kind", "metadata", "spec"],
      properties: {
        apiVersion: { const: API_VERSION },
        kind: { const: h.kind },
        metadata: { type: "object", additionalProperties: false, required: ["name"], properties: { name: { type: "string", minLength: 1, maxLength: 200 } } },
        spec: { ...spec, properties, required },
      },
    };
  });
  schemaCache = {
    $schema: "https://json-schema.org/draft/2020-12/schema",
    $id: "https://fleet.app/schemas/config/v1.json",
    title: "Fleet configuration document",
    oneOf: variants,
  };
  return schemaCache;
}
