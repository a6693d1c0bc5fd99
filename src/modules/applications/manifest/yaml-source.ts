/**
 * Turns manifest text into a plain JS value, safely: bounded size, bounded alias expansion
 * (billion laughs), one document only, and text fields kept as written.
 */
import { isPair, isScalar, parseDocument, Scalar, visit } from "yaml";
import type { Document, Node, Pair } from "yaml";
import { MAX_MANIFEST_BYTES, MAX_YAML_ALIAS_COUNT } from "./rules.js";

export type YamlLoadResult = { ok: true; value: unknown } | { ok: false; message: string };

export function loadManifestYaml(yamlText: string): YamlLoadResult {
  const size = Buffer.byteLength(yamlText, "utf8");
  if (size > MAX_MANIFEST_BYTES) {
    return { ok: false, message: `manifest is ${size} bytes; at most ${MAX_MANIFEST_BYTES} are read` };
  }
  const document = parseDocument(yamlText, { prettyErrors: true, uniqueKeys: true });
  const firstError = document.errors[0];
  if (firstError) {
    return { ok: false, message: `YAML does not parse: ${firstLine(firstError.message)}` };
  }
  keepNumericLookingTextAsWritten(document);
  try {
    return { ok: true, value: document.toJS({ maxAliasCount: MAX_YAML_ALIAS_COUNT }) };
  } catch (error) {
    // yaml throws a ReferenceError once aliases expand past maxAliasCount.
    const reason = error instanceof Error ? error.message : String(error);
    return { ok: false, message: `YAML refused: ${reason}` };
  }
}

/**
 * YAML reads plain `revision: 1.10` as the number 1.1 and `id: 0123` as 123. Every manifest
 * field we read is text except cpu.cores, the opaque parameter values and parameter schemas, so a plain number
 * anywhere else is put back to its source text before validation.
 */
function keepNumericLookingTextAsWritten(document: Document): void {
  visit(document, {
    Scalar(key, node, path) {
      if (key === "key" || typeof node.value !== "number") return;
      if (node.type !== Scalar.PLAIN || node.source === undefined) return;
      const keys = enclosingKeys(path);
      const isCpuCores = keys[keys.length - 1] === "cores";
      const isParameterValue = keys[0] === "parameters" && keys[2] === "value";
      // parameters.<name>.schema.{minimum, maximum, maxLength} and enum members are numbers by design
      const isParameterSchema = keys[0] === "parameters" && keys[2] === "schema" && keys[3] !== "pattern";
      if (isCpuCores || isParameterValue || isParameterSchema) return;
      node.value = node.source;
    },
  });
}

/** The mapping keys leading to a node, e.g. ["parameters", "poll", "value"] (list indexes left out). */
function enclosingKeys(path: readonly (Document | Node | Pair)[]): unknown[] {
  return path.filter(isPair).map((pair) => (isScalar(pair.key) ? pair.key.value : undefined));
}

/** prettyErrors gives "<what> at line L, column C:" followed by a source excerpt we leave out. */
function firstLine(message: string): string {
  return (message.split("\n", 1)[0] ?? message).replace(/:$/, "");
}
