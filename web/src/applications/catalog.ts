// How the catalog's facts read on a page: a parameter's declaration in words, a profile's
// architectures, where a version came from. Pure, so that it is tested without a browser.
import type { RouterOutputs } from "../api/client";

export type Application = RouterOutputs["applications"]["list"]["items"][number];
export type ApplicationDetail = RouterOutputs["applications"]["get"];
export type Version = RouterOutputs["applications"]["versions"]["items"][number];
export type Profile = Version["profiles"][number];
export type Parameter = Version["parameters"][string];
export type Source = Version["source"];

/** The declared type, else what the default value is, else "any". */
export function parameterType(parameter: Parameter): string {
  if (parameter.schema?.type) return parameter.schema.type;
  const value = parameter.value;
  if (value === undefined || value === null) return "any";
  if (Array.isArray(value)) return "list";
  return typeof value === "object" ? "object" : typeof value;
}

/** The default as text: a secret's default is never shown; none when a deployment must give it. */
export function parameterDefault(parameter: Parameter): string {
  if (parameter.value === undefined || parameter.value === null) return parameter.required ? "none (required)" : "none";
  if (parameter.secret) return "set (hidden)";
  return typeof parameter.value === "string" ? parameter.value : JSON.stringify(parameter.value);
}

/** The constraints a deployment's value must meet, in words, in a fixed order. */
export function parameterConstraints(parameter: Parameter): string[] {
  const schema = parameter.schema ?? {};
  const out: string[] = [];
  if (parameter.required) out.push("required");
  if (schema.enum) out.push(`one of ${schema.enum.map(String).join(", ")}`);
  if (schema.minimum !== undefined && schema.maximum !== undefined) out.push(`${schema.minimum} to ${schema.maximum}`);
  else if (schema.minimum !== undefined) out.push(`at least ${schema.minimum}`);
  else if (schema.maximum !== undefined) out.push(`at most ${schema.maximum}`);
  if (schema.maxLength !== undefined) out.push(`at most ${schema.maxLength} characters`);
  if (schema.pattern !== undefined) out.push(`matches ${schema.pattern}`);
  return out;
}

/** A profile's supported CPU architectures; "any" when it names none. */
export function profileArchitectures(profile: Profile): string {
  const archs = profile.requiredResources?.cpu?.architectures;
  return archs && archs.length > 0 ? archs.join(", ") : "any";
}

/** A profile's required resources in words ("2 cores, 512Mi memory"), or "none declared". */
export function profileResources(profile: Profile): string {
  const r = profile.requiredResources;
  const parts: string[] = [];
  if (r?.cpu) parts.push(`${r.cpu.cores} ${r.cpu.cores === 1 ? "core" : "cores"}`);
  if (r?.memory) parts.push(`${r.memory} memory`);
  if (r?.storage) parts.push(`${r.storage} storage`);
  return parts.length > 0 ? parts.join(", ") : "none declared";
}

/** A Git commit or an OCI digest, short enough for a table (the full value goes in a title). */
export function shortRevision(revision: string | undefined): string {
  if (!revision) return "";
  const digest = /^(sha256|sha512):([0-9a-f]+)$/i.exec(revision);
  if (digest) return `${digest[1]}:${digest[2]!.slice(0, 12)}`;
  return /^[0-9a-f]{40,64}$/i.test(revision) ? revision.slice(0, 12) : revision;
}

/** What a source's revision is called: a Git commit or an OCI manifest digest. */
export function revisionLabel(source: Source): string {
  return source.type === "git" ? "commit" : "digest";
}
