// One command per API operation, made from its manifest entry: path parameters are positional
// arguments, query parameters and body fields are flags (a list repeats or takes commas, a map
// takes key=value, a union or nested structure takes JSON, an object's known fields are dotted
// flags too), --input-json gives the whole body, and a paged list takes --all. Nothing here names
// an operation, except the few that a hand-written command covers (COVERED_BY_WORKFLOWS).
import { Command, Option } from "commander";
import type { Field, Operation } from "./manifest.js";
import type { Io } from "./main.js";
import type { Globals } from "./runtime.js";

/** Operations whose command is a hand-written one of the same name, which calls them. */
export const COVERED_BY_WORKFLOWS: Record<string, string> = {
  "devices-delete": "fleet devices delete ID (and --selector: groups-bulkDelete)",
  "config-export": "fleet config export [-d DIR] (the organization by --org or the context)",
  "jobs-create": "fleet jobs create KIND --selector k=v [--canary] [--batches] [--wait]",
};

/**
 * Groups whose name a hand-written command took (`fleet logs DEVICE -f`): their generated
 * commands live under another name (`fleet device-logs list ID`).
 */
export const WORKFLOW_NAMES: Record<string, string> = {
  logs: "device-logs",
  // `fleet mcp` serves the MCP tools on stdio; the endpoint's raw JSON-RPC calls stay reachable
  mcp: "mcp-http",
};

/** The command line of an operation: `fleet GROUP COMMAND`. */
export const commandLineOf = (op: Pick<Operation, "group" | "command">) => `${WORKFLOW_NAMES[op.group] ?? op.group} ${op.command}`;

export interface Binding {
  field: Field;
  /** the option's attribute in commander's values */
  attribute: string;
  where: "query" | "body";
}

/** What each generated command's options stand for. */
export const BINDINGS = new WeakMap<Command, { op: Operation; bindings: Binding[] }>();

const collectList = (value: string, previous: string[] = []) => [...previous, ...value.split(",").filter((v) => v !== "")];

/** Values completion offers for a flag that takes several (commander's choices would refuse "a,b"). */
export const COMPLETIONS = new WeakMap<Option, string[]>();

function withCompletions(option: Option, values: string[] | undefined): Option {
  if (values) COMPLETIONS.set(option, values);
  return option;
}

function optionOf(field: Field, where: "query" | "body"): Option {
  const required = field.required ? " (required)" : "";
  const values = field.enum ? ` [${field.enum.join("|")}]` : "";
  const text = (field.description ?? `${where === "query" ? "query parameter" : "body field"} ${field.name}`) + values + required;
  switch (field.kind) {
    case "boolean":
      return new Option(`--${field.flag} [true|false]`, text).argParser((v: string | boolean) => {
        if (v === true || v === "true") return true;
        if (v === "false") return false;
        throw new Error(`--${field.flag} takes true or false, not "${v}"`);
      }).preset(true);
    case "integer":
    case "number":
      return new Option(`--${field.flag} <${field.kind}>`, text).argParser((v: string) => {
        const n = Number(v);
        if (v.trim() === "" || Number.isNaN(n)) throw new Error(`--${field.flag} takes a number, not "${v}"`);
        return n;
      });
    case "list":
      return withCompletions(new Option(`--${field.flag} <value>`, `${text} (repeatable, or comma-separated)`).argParser(collectList), field.enum);
    case "map":
      return new Option(`--${field.flag} <key=value>`, `${text} (key=value, repeatable)`).argParser(collectList);
    case "json":
      return new Option(`--${field.flag} <json>`, `${text} (JSON)`);
    default: {
      const option = new Option(`--${field.flag} <value>`, text);
      return field.enum ? option.choices(field.enum) : option;
    }
  }
}

const argName = (name: string) => name.replace(/([a-z0-9])([A-Z])/g, "$1-$2").toLowerCase();

export function addOperationCommand(
  group: Command,
  op: Operation,
  _io: Io,
  run: (loader: () => Promise<(args: unknown[], g: Globals, io: Io, cmd: Command) => Promise<number | void>>) => (...params: unknown[]) => Promise<void>,
): Command {
  const cmd = group.command(op.command).summary(op.summary);
  cmd.description(`${op.summary}\n\n${op.method} /api/v1${op.path}${op.description ? `\n\n${op.description}` : ""}`);
  for (const arg of op.args) cmd.argument(`<${argName(arg.name)}>`, arg.description ?? arg.name);
  const bindings: Binding[] = [];
  const seen = new Set<string>();
  for (const [where, fields] of [["query", op.query], ["body", op.body ?? []]] as const) {
    for (const field of fields) {
      if (seen.has(field.flag)) continue;
      seen.add(field.flag);
      const option = optionOf(field, where);
      cmd.addOption(option);
      bindings.push({ field, attribute: option.attributeName(), where });
    }
  }
  if (op.body) cmd.option("--input-json <json>", "the whole request body as JSON (@file reads a file, - reads stdin); flags override its fields");
  if (op.paged) cmd.option("--all", "every page, 200 items at a time");
  BINDINGS.set(cmd, { op, bindings });
  cmd.action(run(async () => (await import("./invoke.js")).invokeGenerated));
  return cmd;
}
