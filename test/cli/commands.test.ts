// The generated half of `fleet`: every operation of the OpenAPI document is a command, made
// from its metadata alone, so a new procedure becomes a command with no CLI code. No service
// here: the command tree and the requests it would send (test/cli/cli.test.ts runs them).
import fs from "node:fs";
import { PassThrough } from "node:stream";
import type { Command } from "commander";
import { describe, expect, it } from "vitest";
import { buildProgram, type Io } from "../../cli/src/main.js";
import { BINDINGS, COVERED_BY_WORKFLOWS, commandLineOf } from "../../cli/src/generated.js";
import { requestOf } from "../../cli/src/invoke.js";
import { candidates } from "../../cli/src/completion.js";
import { compileManifest, manifestText, type Manifest, type OpenApiDocument } from "../../cli/src/manifest.js";
import { OPENAPI_FIXTURE } from "../support/openapi-snapshot.js";

const doc = JSON.parse(fs.readFileSync(OPENAPI_FIXTURE, "utf8")) as OpenApiDocument;
const manifest = compileManifest(doc);
const io: Io = { stdout: new PassThrough(), stderr: new PassThrough(), stdin: new PassThrough(), env: {} };

function commandAt(program: Command, words: string[]): Command | undefined {
  let cmd: Command | undefined = program;
  for (const word of words) cmd = cmd?.commands.find((c) => c.name() === word);
  return cmd;
}

/** The request the generated command makes of `argv` (fleet GROUP COMMAND ARGS... FLAGS...). */
async function requestFor(m: Manifest, argv: string[]) {
  const program = buildProgram(m, io, argv);
  const cmd = commandAt(program, argv.slice(0, 2))!;
  let captured: { args: string[]; values: Record<string, unknown> } | null = null;
  cmd.action((...params: unknown[]) => {
    const self = params[params.length - 1] as Command;
    captured = { args: self.args, values: self.opts() };
  });
  await program.parseAsync(argv, { from: "user" });
  const bound = BINDINGS.get(cmd)!;
  return requestOf(bound.op, captured!.args, captured!.values, bound.bindings, io);
}

describe("fleet's generated commands", () => {
  it("come from the committed OpenAPI document: cli/operations.json is what it compiles to (npm run openapi:snapshot writes both)", () => {
    expect(fs.readFileSync(new URL("../../cli/operations.json", import.meta.url), "utf8")).toBe(manifestText(manifest));
  });

  it("are one per operation of the document, with its path parameters as arguments and its query and body fields as flags", () => {
    const program = buildProgram(manifest, io, null);
    const operationIds = Object.values(doc.paths).flatMap((item) => Object.values(item).map((op) => (op as { operationId?: string }).operationId)).filter(Boolean);
    expect(manifest.operations.map((op) => op.id).sort()).toEqual(operationIds.sort());
    const missing: string[] = [];
    for (const op of manifest.operations) {
      const cmd = commandAt(program, commandLineOf(op).split(" "));
      if (!cmd) {
        missing.push(`${op.id}: no command fleet ${commandLineOf(op)}`);
        continue;
      }
      if (COVERED_BY_WORKFLOWS[op.id]) continue;
      const bound = BINDINGS.get(cmd);
      if (bound?.op.id !== op.id) missing.push(`${op.id}: fleet ${commandLineOf(op)} runs ${bound?.op.id}`);
      expect(cmd.registeredArguments.map((a) => a.name()), op.id).toHaveLength(op.args.length);
      const flags = cmd.options.map((o) => o.long);
      for (const field of [...op.query, ...(op.body ?? [])]) expect(flags, `${op.id} --${field.flag}`).toContain(`--${field.flag}`);
      if (op.paged) expect(flags, op.id).toContain("--all");
    }
    expect(missing).toEqual([]);
    // the sample the issue names
    expect(commandAt(program, ["devices", "list"])!.options.map((o) => o.long)).toEqual(expect.arrayContaining(["--status", "--labels", "--limit", "--offset", "--all"]));
    expect(commandAt(program, ["deployments", "get"])!.registeredArguments.map((a) => a.name())).toEqual(["id"]);
  });

  it("make a new procedure a command with no CLI code: its path, query and body from its metadata", async () => {
    const widgets: OpenApiDocument = {
      info: { version: "9.9.9" },
      paths: {
        "/widgets/{widgetId}/spin": {
          post: {
            operationId: "widgets-spinFast",
            summary: "Spin a widget",
            tags: ["Widgets"],
            parameters: [
              { in: "path", name: "widgetId", required: true, schema: { type: "string" } },
              { in: "query", name: "dryRun", schema: { type: "boolean" } },
            ],
            requestBody: {
              content: {
                "application/json": {
                  schema: {
                    type: "object",
                    required: ["speed"],
                    properties: {
                      speed: { type: "integer", description: "turns per second" },
                      direction: { type: "string", enum: ["left", "right"] },
                      labels: { type: "object", additionalProperties: { type: "string" } },
                      tags: { type: "array", items: { type: "string" } },
                      retry: { type: "object", properties: { maxAttempts: { type: "integer" }, note: { type: "string" } } },
                      shape: { oneOf: [{ type: "object", properties: { circle: { type: "number" } } }, { type: "object", properties: { square: { type: "number" } } }] },
                    },
                  },
                },
              },
            },
            responses: { "200": { content: { "application/json": { schema: { type: "object" } } } } },
          },
        },
      },
    };
    const m = compileManifest(widgets);
    const request = await requestFor(m, [
      "widgets", "spin-fast", "w-1", "--dry-run", "--speed", "3", "--direction", "left", "--labels", "site=berlin", "--labels", "tier=edge",
      "--tags", "a,b", "--tags", "c", "--retry.max-attempts", "4", "--shape", '{"circle":2}',
    ]);
    expect(request).toEqual({
      path: "/widgets/w-1/spin",
      query: { dryRun: true },
      body: { speed: 3, direction: "left", labels: { site: "berlin", tier: "edge" }, tags: ["a", "b", "c"], retry: { maxAttempts: 4 }, shape: { circle: 2 } },
    });
    // --input-json gives the body; flags override its fields
    expect(await requestFor(m, ["widgets", "spin-fast", "w-2", "--input-json", '{"speed":1,"direction":"right"}', "--speed", "5"])).toEqual({
      path: "/widgets/w-2/spin", query: {}, body: { speed: 5, direction: "right" },
    });
    // the enum is offered by completion
    expect(candidates(buildProgram(m, io, null), ["widgets", "spin-fast", "--direction", ""])).toEqual(["left", "right"]);
  });

  it("offer groups, commands, flags and enum values to completion", () => {
    const program = buildProgram(manifest, io, null);
    expect(candidates(program, ["dep"])).toEqual(["deploy", "deployments"]);
    expect(candidates(program, ["devices", ""])).toEqual(expect.arrayContaining(["list", "get", "label", "unlabel", "delete"]));
    expect(candidates(program, ["devices", "list", "--st"])).toEqual(["--status"]);
    expect(candidates(program, ["devices", "list", "--status", ""])).toEqual(["error", "offline", "online", "pending", "provisioned"]);
    expect(candidates(program, ["-o", ""])).toEqual(["json", "name", "table", "wide", "yaml"]);
  });
});
