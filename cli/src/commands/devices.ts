// fleet devices label|unlabel|delete --selector: bulk operations over the devices a label
// selector matches, each one API call over the whole set (POST /groups/labels/bulk, POST
// /groups/devices/bulk-delete). A delete shows the count first (POST /groups/query) and asks on a
// terminal; elsewhere it needs --yes. fleet devices preauthorize -f: the factory's list. fleet
// devices config DEVICE: its effective configuration with where each value came from.
import fs from "node:fs";
import type { Command } from "commander";
import { CliError, EXIT } from "../errors.js";
import { table } from "../output.js";
import { connect, consent, formatOf, idByName, pairs, print, type Globals } from "../runtime.js";
import type { Io } from "../main.js";

function selectorOf(values: string[] | undefined): Record<string, string> {
  const selector = pairs(values, "--selector");
  if (!Object.keys(selector).length) throw new CliError(EXIT.usage, "--selector key=value is required (a bulk operation never takes every device by default)");
  return selector;
}

function report(io: Io, globals: Globals, result: Record<string, number>, sentence: string) {
  if (formatOf(globals, io) === "table") io.stdout.write(`${sentence}\n`);
  else print(io, globals, result);
}

export async function label(args: unknown[], globals: Globals, io: Io, cmd: Command): Promise<void> {
  const labelSelector = selectorOf(cmd.opts().selector);
  const set = pairs((args[0] as string[]), "labels");
  const { client } = await connect(globals, io);
  const result = await client.request<{ matched: number; updated: number; skipped: number }>("POST", "/groups/labels/bulk", { body: { labelSelector, set } });
  report(io, globals, result, `${result.matched} devices matched, ${result.updated} updated${result.skipped ? `, ${result.skipped} skipped (64 labels at most)` : ""}`);
}

export async function unlabel(args: unknown[], globals: Globals, io: Io, cmd: Command): Promise<void> {
  const labelSelector = selectorOf(cmd.opts().selector);
  const remove = args[0] as string[];
  const { client } = await connect(globals, io);
  const result = await client.request<{ matched: number; updated: number; skipped: number }>("POST", "/groups/labels/bulk", { body: { labelSelector, remove } });
  report(io, globals, result, `${result.matched} devices matched, ${result.updated} updated`);
}

export async function remove(args: unknown[], globals: Globals, io: Io, cmd: Command): Promise<number | void> {
  const opts = cmd.opts<{ selector?: string[]; yes?: boolean }>();
  const id = args[0] as string | undefined;
  if (id && opts.selector?.length) throw new CliError(EXIT.usage, "give a device id or --selector, not both");
  if (!id && !opts.selector?.length) throw new CliError(EXIT.usage, "fleet devices delete takes a device id, or --selector key=value");
  const { client } = await connect(globals, io);
  if (id) {
    await client.request("DELETE", `/devices/${encodeURIComponent(id)}`);
    return report(io, globals, { deleted: 1 }, `device ${id} deleted`);
  }
  const labelSelector = selectorOf(opts.selector);
  const { total: count } = await client.request<{ total: number }>("POST", "/groups/query", { body: { labelSelector } });
  const text = Object.entries(labelSelector).map(([k, v]) => `${k}=${v}`).join(",");
  io.stderr.write(`${count} devices match ${text}\n`);
  if (count === 0) return report(io, globals, { deleted: 0, revokedCertificates: 0 }, "nothing to delete");
  if (!(await consent(io, opts.yes, `Delete these ${count} devices and revoke their certificates? [y/N] `, `deleting ${count} devices`))) {
    io.stderr.write("nothing deleted\n");
    return EXIT.error;
  }
  const result = await client.request<{ deleted: number; revokedCertificates: number }>("POST", "/groups/devices/bulk-delete", { body: { labelSelector } });
  report(io, globals, result, `${result.deleted} devices deleted, ${result.revokedCertificates} certificates revoked`);
}

/** The factory's list, CSV or JSON (told apart by its first character, as the console does), in one import. */
export async function preauthorize(_args: unknown[], globals: Globals, io: Io, cmd: Command): Promise<void> {
  const file = cmd.opts<{ file: string }>().file;
  let text: string;
  try {
    text = fs.readFileSync(file === "-" ? 0 : file, "utf8");
  } catch (err) {
    throw new CliError(EXIT.usage, `cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  let body: { devices: unknown[] } | { csv: string };
  if (/^\s*[[{]/.test(text)) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (err) {
      throw new CliError(EXIT.usage, `${file} is not valid JSON: ${(err as Error).message}`);
    }
    body = { devices: Array.isArray(parsed) ? parsed : ((parsed as { devices?: unknown[] }).devices ?? []) };
  } else {
    body = { csv: text };
  }
  const { client } = await connect(globals, io);
  const result = await client.request<{ created: number; updated: number }>("POST", "/preauthorized-devices/import", { body });
  report(io, globals, result, `${result.created} pre-authorized devices added, ${result.updated} replaced`);
}

interface Provenance { layer: string; revision: number }
interface EffectiveConfiguration {
  deviceName: string;
  revision: string;
  layers: Array<Provenance & { kind: string; order: number | null }>;
  variables: Array<Provenance & { name: string; value: string | null; secret: boolean; overrode: Provenance[] }>;
  files: Array<Provenance & { path: string; mode: string; owner: string | null; sizeBytes: number; secret: boolean; overrode: Provenance[] }>;
  reported: { state: string | null; message: string | null; appliedRevision: string | null; drift: Array<{ path: string }> } | null;
  inSync: boolean;
}

const at = (p: Provenance) => `${p.layer}@${p.revision}`;

/** Where the device stands with its configuration, in one line. */
function standing(view: EffectiveConfiguration): string {
  const short = (revision: string | null) => (revision ? revision.slice(0, 12) : "none");
  const drift = view.reported?.drift.length ? `; drifted: ${view.reported.drift.map((d) => d.path).join(", ")}` : "";
  if (view.inSync) return `in sync${drift}`;
  if (!view.reported) return "not reported by the device yet";
  if (view.reported.state === "failed") return `failed on the device: ${view.reported.message ?? "no reason given"} (it keeps ${short(view.reported.appliedRevision)})${drift}`;
  if (view.reported.state === "unrenderable") return `cannot be rendered: ${view.reported.message ?? ""}`;
  return `the device runs ${short(view.reported.appliedRevision)}, not this one yet${drift}`;
}

/**
 * fleet devices config DEVICE: the device's effective configuration (GET /config-layers/effective),
 * each variable and file with the layer and revision it came from and what it overrode; the
 * answer as it is with -o json|yaml. Secrets are named, never shown (the API answers none).
 */
export async function config(args: unknown[], globals: Globals, io: Io): Promise<void> {
  const { client } = await connect(globals, io);
  const deviceId = await idByName(client, "/devices", String(args[0]), "device");
  const view = await client.request<EffectiveConfiguration>("GET", `/config-layers/effective?deviceId=${encodeURIComponent(deviceId)}`);
  if (formatOf(globals, io) !== "table") return print(io, globals, view);
  const out: string[] = [`device ${view.deviceName}, configuration ${view.revision.slice(0, 12)}: ${standing(view)}`];
  out.push(`layers, lowest precedence first: ${view.layers.length ? view.layers.map(at).join(", ") : "none"}`);
  if (view.variables.length) {
    out.push("", table([["VARIABLE", "VALUE", "FROM", "OVERRODE"], ...view.variables.map((v) => [
      v.name, v.secret ? "(secret)" : (v.value ?? "(takes in a secret)"), at(v), v.overrode.map(at).join(", ") || "-",
    ])]).trimEnd());
  }
  if (view.files.length) {
    out.push("", table([["FILE", "MODE", "OWNER", "BYTES", "FROM", "OVERRODE"], ...view.files.map((f) => [
      f.path, f.mode, f.owner ?? "-", String(f.sizeBytes), at(f), f.overrode.map(at).join(", ") || "-",
    ])]).trimEnd());
  }
  io.stdout.write(`${out.join("\n")}\n`);
}
