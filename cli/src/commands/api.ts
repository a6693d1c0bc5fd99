// fleet api sync|operations: the manifest the generated commands come from. `sync` fetches the
// OpenAPI document the context's server serves (GET /api/v1/openapi.json) and keeps its compiled
// operations for that server, so a server newer than this CLI brings its new commands at once.
import fs from "node:fs";
import path from "node:path";
import { compileManifest, manifestText, type OpenApiDocument } from "../manifest.js";
import { loadManifest, syncedManifestPath } from "../load-manifest.js";
import { commandLineOf } from "../generated.js";
import { connect, print, type Globals } from "../runtime.js";
import type { Io } from "../main.js";

export async function sync(_args: unknown[], globals: Globals, io: Io): Promise<void> {
  const { client } = await connect(globals, io);
  const doc = await client.request<OpenApiDocument>("GET", "/openapi.json");
  const manifest = compileManifest(doc);
  const file = syncedManifestPath(client.server, io.env);
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  fs.writeFileSync(file, manifestText(manifest));
  io.stderr.write(`${manifest.operations.length} operations of ${client.server} (API ${manifest.version}) saved in ${file}\n`);
}

export async function operations(_args: unknown[], globals: Globals, io: Io): Promise<void> {
  const manifest = loadManifest(io.env);
  print(io, globals, manifest.operations.map((op) => ({ command: `fleet ${commandLineOf(op)}`, method: op.method, path: `/api/v1${op.path}`, operationId: op.id, summary: op.summary })));
}
