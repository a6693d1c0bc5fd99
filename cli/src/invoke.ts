// Running a generated command: its arguments and flags become the request the operation's
// metadata describes, the answer is printed in the chosen format (a stream as it comes).
import fs from "node:fs";
import type { Command } from "commander";
import { BINDINGS } from "./generated.js";
import { CliError, EXIT } from "./errors.js";
import { connect, print, readStdin, type Globals } from "./runtime.js";
import type { ApiClient } from "./client.js";
import type { Field, Operation } from "./manifest.js";
import type { Io } from "./main.js";

/** A map flag's key=value items as an object (values stay strings: the API's maps hold strings). */
function mapOf(field: Field, values: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const value of values) {
    const at = value.indexOf("=");
    if (at <= 0) throw new CliError(EXIT.usage, `--${field.flag} takes key=value, not "${value}"`);
    out[value.slice(0, at)] = value.slice(at + 1);
  }
  return out;
}

function listOf(field: Field, values: string[]): unknown[] {
  if (field.items === "integer" || field.items === "number") {
    return values.map((v) => {
      const n = Number(v);
      if (Number.isNaN(n)) throw new CliError(EXIT.usage, `--${field.flag} takes numbers, not "${v}"`);
      return n;
    });
  }
  if (field.items === "boolean") return values.map((v) => v === "true");
  if (field.enum) {
    const wrong = values.find((v) => !field.enum!.includes(v));
    if (wrong) throw new CliError(EXIT.usage, `--${field.flag}: "${wrong}" is not one of ${field.enum.join(", ")}`);
  }
  return values;
}

function jsonOf(flag: string, text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new CliError(EXIT.usage, `--${flag} takes JSON: ${(err as Error).message}`);
  }
}

function setPath(target: Record<string, unknown>, dotted: string, value: unknown) {
  const keys = dotted.split(".");
  let at = target;
  for (const key of keys.slice(0, -1)) {
    if (typeof at[key] !== "object" || at[key] === null) at[key] = {};
    at = at[key] as Record<string, unknown>;
  }
  at[keys[keys.length - 1]] = value;
}

/** The request an operation's command line makes: path, query and body. */
export async function requestOf(op: Operation, args: string[], values: Record<string, unknown>, bindings: NonNullable<ReturnType<typeof BINDINGS.get>>["bindings"], io: Io) {
  let path = op.path;
  op.args.forEach((arg, i) => {
    path = path.replace(`{${arg.name}}`, encodeURIComponent(args[i]));
  });
  const query: Record<string, unknown> = {};
  let body: Record<string, unknown> | undefined;
  if (op.body) {
    const input = values.inputJson as string | undefined;
    if (input !== undefined) {
      const text = input === "-" ? await readStdin(io) : input.startsWith("@") ? fs.readFileSync(input.slice(1), "utf8") : input;
      const parsed = jsonOf("input-json", text);
      if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) throw new CliError(EXIT.usage, "--input-json takes a JSON object");
      body = parsed as Record<string, unknown>;
    }
  }
  for (const { field, attribute, where } of bindings) {
    const raw = values[attribute];
    if (raw === undefined) continue;
    const value = field.kind === "map" ? mapOf(field, raw as string[]) : field.kind === "list" ? listOf(field, raw as string[]) : field.kind === "json" ? jsonOf(field.flag, raw as string) : raw;
    if (where === "query") query[field.name] = field.kind === "map" ? Object.entries(value as object).map(([k, v]) => `${k}=${v}`).join(",") : value;
    else setPath((body ??= {}), field.name, value);
  }
  return { path, query, body };
}

export async function invokeGenerated(args: unknown[], globals: Globals, io: Io, cmd: Command): Promise<number | void> {
  const bound = BINDINGS.get(cmd);
  if (!bound) throw new Error(`no operation behind "${cmd.name()}"`);
  const { op, bindings } = bound;
  const values = cmd.opts();
  const { path, query, body } = await requestOf(op, args as string[], values, bindings, io);
  const { client } = await connect(globals, io);
  await callOperation(client, op, path, query, body, Boolean(values.all), globals, io);
}

export async function callOperation(client: ApiClient, op: Operation, path: string, query: Record<string, unknown>, body: unknown, all: boolean, globals: Globals, io: Io) {
  if (op.answers === "stream") {
    const res = await client.request<Response>(op.method, path, { query, body, raw: true, headers: { accept: "*/*" } });
    for await (const chunk of res.body ?? []) io.stdout.write(chunk as Uint8Array);
    return;
  }
  if (all && op.paged) {
    const { offset: _o, limit: _l, ...rest } = query;
    print(io, globals, await client.all(path, rest));
    return;
  }
  print(io, globals, await client.request(op.method, path, { query, body }));
}
