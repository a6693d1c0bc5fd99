// The effective configuration of a device: which layers apply, in which precedence, what each
// variable and file ends up as (rendered), where it came from and what it overrode, and the
// revision (sha256) the agent reports back. Pure and in memory: a rollout over many devices
// loads the layers once (prepareLayers) and computes each device from them; no query per device.
//
// Precedence, lowest first: the organization's default, the selector layers whose selector the
// device's labels satisfy in ascending `order`, the device's own override. A later layer's
// variable (or secret) of a name, or file of a path, replaces an earlier one's. Two matching
// selector layers at one order have no precedence between them: a conflict naming both.
import { createHash } from "node:crypto";
import { selectorMatches, type Labels } from "../devices/selector.js";
import { parseTemplate, referenceName, renderPieces, type Piece, type Reference } from "./template.js";

export type LayerKind = "organization" | "selector" | "device";

export interface FileSpec {
  path: string;
  /** text content (templated unless template is false) */
  content?: string;
  /** binary content (never templated) */
  contentBase64?: string;
  mode: string;
  owner?: string;
  template?: boolean;
}

/** A secret as the computation sees it: its value only when it is to be delivered, else a stand-in. */
export interface SecretEntry {
  /** a keyed digest of the value (SecretBox.fingerprint): stable, says nothing about the value */
  fingerprint: string;
  value?: string;
}

export interface LayerState {
  id: string;
  name: string;
  kind: LayerKind;
  order: number | null;
  selector: Labels | null;
  deviceId: string | null;
  revision: number;
  variables: Record<string, string>;
  files: FileSpec[];
  secrets: Record<string, SecretEntry>;
  activation: { command: string[] } | null;
}

export interface DeviceContext {
  id: string;
  name: string;
  labels: Labels;
  facts: Record<string, unknown>;
}

/** A layer with its templates read once (prepareLayers), for any number of devices. */
export interface PreparedLayer extends LayerState {
  variablePieces: Map<string, Piece[]>;
  filePieces: Map<string, Piece[] | null>;
  /** what of a device the layer's templates read (labels, facts, name, id), each once */
  deviceReferences: Reference[];
}

/** Why a device's configuration cannot be computed: a conflict of two layers, or a template. */
export class ConfigurationError extends Error {
  constructor(readonly kind: "conflict" | "template", message: string) {
    super(message);
  }
}

export interface Provenance {
  layerId: string;
  layer: string;
  revision: number;
}

export interface EffectiveVariable extends Provenance {
  value: string;
  /** a secret, or a value that takes one in (never answered by the API) */
  secret: boolean;
  /** the layers below that set the same name, nearest first */
  overrode: Provenance[];
}

export interface EffectiveFile extends Provenance {
  path: string;
  contentBase64: string;
  sha256: string;
  sizeBytes: number;
  mode: string;
  owner?: string;
  binary: boolean;
  secret: boolean;
  overrode: Provenance[];
}

export interface Activation {
  layer: string;
  command: string[];
  paths: string[];
}

export interface Effective {
  /** sha256 hex of the configuration, secrets counted by their fingerprints */
  revision: string;
  layers: Array<Provenance & { kind: LayerKind; order: number | null }>;
  variables: Record<string, EffectiveVariable>;
  files: EffectiveFile[];
  activations: Activation[];
}

const layerLabel = (layer: LayerState) => `layer "${layer.name}"`;

function piecesOrThrow(layer: LayerState, key: string, text: string): Piece[] {
  try {
    return parseTemplate(text);
  } catch (err) {
    throw new ConfigurationError("template", `${layerLabel(layer)} ${key}: ${(err as Error).message}`);
  }
}

/** Reads every template of the layers once; throws ConfigurationError naming layer and key. */
export function prepareLayers(layers: LayerState[]): PreparedLayer[] {
  return layers.map((layer) => {
    const variablePieces = new Map(Object.entries(layer.variables).map(([name, value]) => [name, piecesOrThrow(layer, `variables.${name}`, value)]));
    const filePieces = new Map(layer.files.map((f) => [
      f.path,
      f.content !== undefined && f.template !== false ? piecesOrThrow(layer, `files[${f.path}]`, f.content) : null,
    ]));
    const references = new Map<string, Reference>();
    for (const pieces of [...variablePieces.values(), ...filePieces.values()]) {
      for (const piece of pieces ?? []) if (typeof piece !== "string" && piece.ref.root !== "vars") references.set(referenceName(piece.ref), piece.ref);
    }
    return { ...layer, variablePieces, filePieces, deviceReferences: [...references.values()] };
  });
}

const RANK: Record<LayerKind, number> = { organization: 0, selector: 1, device: 2 };

/** The layers that apply to a device, lowest precedence first; throws a conflict of two at one order. */
export function applicableLayers<L extends LayerState>(layers: L[], device: Pick<DeviceContext, "id" | "labels">): L[] {
  const applying = layers.filter((l) =>
    l.kind === "organization" || (l.kind === "device" ? l.deviceId === device.id : selectorMatches(l.selector ?? {}, device.labels)));
  applying.sort((a, b) => RANK[a.kind] - RANK[b.kind] || (a.order ?? 0) - (b.order ?? 0) || a.name.localeCompare(b.name));
  for (let i = 1; i < applying.length; i++) {
    const [a, b] = [applying[i - 1], applying[i]];
    if (a.kind === "selector" && b.kind === "selector" && a.order === b.order) {
      throw new ConfigurationError("conflict", `layers "${a.name}" and "${b.name}" both match this device at order ${a.order}: give one of them another order`);
    }
  }
  return applying;
}

const provenanceOf = (layer: LayerState): Provenance => ({ layerId: layer.id, layer: layer.name, revision: layer.revision });

interface RawVariable extends Provenance {
  pieces: Piece[] | null;
  /** a secret's value as this computation uses it (the value, or its fingerprint) */
  literal: string | null;
  owner: PreparedLayer;
  overrode: Provenance[];
}

export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
  }
  return JSON.stringify(value);
}

const sha256 = (data: Buffer | string) => createHash("sha256").update(data).digest("hex");

/**
 * The effective configuration of one device. With `reveal`, secrets are their values (what the
 * device gets); without, their fingerprints (what the revision and the API's view are made of).
 * Throws ConfigurationError: a conflict, or a template naming what the device does not have.
 * With `reveal`, `revision` (when given) is the one computed without it, not computed again.
 */
export function computeEffective(prepared: PreparedLayer[], device: DeviceContext, options: { reveal?: boolean; revision?: string } = {}): Effective {
  const applying = applicableLayers(prepared, device);
  // the revision never depends on a secret's value, only on its fingerprint (`revision`: known already)
  const hiddenRevision = options.reveal ? options.revision ?? computeEffective(prepared, device).revision : null;

  // Precedence: each name and path taken by the highest layer that sets it.
  const raw = new Map<string, RawVariable>();
  const files = new Map<string, { spec: FileSpec; owner: PreparedLayer; overrode: Provenance[] }>();
  for (const layer of applying) {
    const entries: Array<[string, Piece[] | null, string | null]> = [
      ...[...layer.variablePieces].map(([name, pieces]): [string, Piece[] | null, string | null] => [name, pieces, null]),
      ...Object.entries(layer.secrets).map(([name, s]): [string, Piece[] | null, string | null] => [name, null, options.reveal ? s.value ?? "" : s.fingerprint]),
    ];
    for (const [name, pieces, literal] of entries) {
      const below = raw.get(name);
      raw.set(name, {
        layerId: layer.id, layer: layer.name, revision: layer.revision, pieces, literal, owner: layer,
        overrode: below ? [provenanceOf(below.owner), ...below.overrode] : [],
      });
    }
    for (const spec of layer.files) {
      const below = files.get(spec.path);
      files.set(spec.path, { spec, owner: layer, overrode: below ? [provenanceOf(below.owner), ...below.overrode] : [] });
    }
  }

  // Variables may refer to each other: resolved on demand, a cycle refused.
  const resolved = new Map<string, { value: string; secret: boolean }>();
  const resolving: string[] = [];
  const fail = (owner: LayerState, key: string, ref: Reference): never => {
    throw new ConfigurationError("template", `${layerLabel(owner)} ${key}: {{ ${referenceName(ref)} }} names ${describeMissing(ref)}, which this device does not have`);
  };
  const resolveVariable = (name: string): { value: string; secret: boolean } | undefined => {
    const done = resolved.get(name);
    if (done) return done;
    const entry = raw.get(name);
    if (!entry) return undefined;
    if (entry.literal !== null) {
      const secret = { value: entry.literal, secret: true };
      resolved.set(name, secret);
      return secret;
    }
    if (resolving.includes(name)) {
      throw new ConfigurationError("template", `${layerLabel(entry.owner)} variables.${name}: refers to itself through ${[...resolving.slice(resolving.indexOf(name)), name].map((n) => `vars.${n}`).join(" -> ")}`);
    }
    resolving.push(name);
    const rendered = renderWith(entry.pieces!, entry.owner, `variables.${name}`);
    resolving.pop();
    resolved.set(name, rendered);
    return rendered;
  };
  const renderWith = (pieces: Piece[], owner: LayerState, key: string): { value: string; secret: boolean } => {
    let secret = false;
    const result = renderPieces(pieces, (ref) => {
      if (ref.root === "vars") {
        const v = resolveVariable(ref.key);
        if (v?.secret) secret = true;
        return v?.value;
      }
      return deviceValue(device, ref);
    });
    if ("missing" in result) return fail(owner, key, result.missing);
    return { value: result.text, secret };
  };

  const variables: Record<string, EffectiveVariable> = {};
  for (const name of [...raw.keys()].sort()) {
    const entry = raw.get(name)!;
    const { value, secret } = resolveVariable(name)!;
    variables[name] = { layerId: entry.layerId, layer: entry.layer, revision: entry.revision, value, secret, overrode: entry.overrode };
  }

  const effectiveFiles: EffectiveFile[] = [...files.values()]
    .sort((a, b) => (a.spec.path < b.spec.path ? -1 : a.spec.path > b.spec.path ? 1 : 0))
    .map(({ spec, owner, overrode }) => {
      const pieces = owner.filePieces.get(spec.path) ?? null;
      let data: Buffer;
      let secret = false;
      if (spec.contentBase64 !== undefined) data = Buffer.from(spec.contentBase64, "base64");
      else if (pieces) {
        const rendered = renderWith(pieces, owner, `files[${spec.path}]`);
        data = Buffer.from(rendered.value, "utf8");
        secret = rendered.secret;
      } else data = Buffer.from(spec.content ?? "", "utf8");
      return {
        ...provenanceOf(owner), path: spec.path, contentBase64: data.toString("base64"), sha256: sha256(data), sizeBytes: data.length,
        mode: spec.mode, ...(spec.owner ? { owner: spec.owner } : {}), binary: spec.contentBase64 !== undefined, secret, overrode,
      };
    });

  // A layer's activation runs after any of its own paths changed (whichever layer's content won).
  const activations: Activation[] = applying
    .filter((l) => l.activation && l.files.length)
    .map((l) => ({ layer: l.name, command: l.activation!.command, paths: l.files.map((f) => f.path).sort() }));

  const revision = hiddenRevision ?? sha256(canonicalJson({
    variables: Object.fromEntries(Object.entries(variables).map(([n, v]) => [n, v.value])),
    files: effectiveFiles.map((f) => ({ path: f.path, sha256: f.sha256, mode: f.mode, owner: f.owner ?? null })),
    activations,
  }));
  return {
    revision,
    layers: applying.map((l) => ({ ...provenanceOf(l), kind: l.kind, order: l.order })),
    variables,
    files: effectiveFiles,
    activations,
  };
}

function describeMissing(ref: Reference): string {
  switch (ref.root) {
    case "vars": return `the variable ${ref.key}`;
    case "labels": return `the label ${ref.key}`;
    case "facts": return `the fact ${ref.key}`;
    case "device": return `the device's ${ref.field}`;
  }
}

function deviceValue(device: DeviceContext, ref: Reference): string | undefined {
  switch (ref.root) {
    case "device": return ref.field === "name" ? device.name : device.id;
    case "labels": return Object.hasOwn(device.labels, ref.key) ? device.labels[ref.key] : undefined;
    case "facts": {
      if (!Object.hasOwn(device.facts, ref.key)) return undefined;
      const value = device.facts[ref.key];
      return value === null || value === undefined ? undefined : String(value);
    }
    case "vars": return undefined;
  }
}

/** The revision of a device's configuration without revealing a secret (a rollout's, a preview's). */
export function revisionOf(prepared: PreparedLayer[], device: DeviceContext): { revision: string } | { error: string } {
  try {
    return { revision: computeEffective(prepared, device).revision };
  } catch (err) {
    if (err instanceof ConfigurationError) return { error: err.message };
    throw err;
  }
}

/**
 * What a device's configuration depends on: the layers that apply to it (applicableLayers)
 * and the values of what their templates read of it. Equal keys, equal configurations.
 */
export function configurationKey(applying: PreparedLayer[], device: DeviceContext): string {
  // with the revision: a device of a rollout holds another revision of a layer than its neighbours
  let key = applying.map((l) => `${l.id}@${l.revision}`).join(",");
  for (const layer of applying) for (const ref of layer.deviceReferences) key += `\u0000${referenceName(ref)}=${deviceValue(device, ref) ?? "\u0001"}`;
  return key;
}

/**
 * The revisions of many devices (a rollout's, a preview page's). Devices with the same
 * applying layers and the same values of what those layers' templates read of a device (a
 * site label, say) have the same configuration: it is computed once for all of them.
 */
export function revisionsOf(prepared: PreparedLayer[], devices: DeviceContext[]): Array<{ revision: string } | { error: string }> {
  const computed = new Map<string, { revision: string } | { error: string }>();
  return devices.map((device) => {
    let applying: PreparedLayer[];
    try {
      applying = applicableLayers(prepared, device);
    } catch (err) {
      if (err instanceof ConfigurationError) return { error: err.message };
      throw err;
    }
    const key = configurationKey(applying, device);
    let result = computed.get(key);
    if (!result) {
      result = revisionOf(applying, device);
      computed.set(key, result);
    }
    return result;
  });
}
