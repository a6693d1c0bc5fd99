// Preloaded into a service process by the tracing tests (NODE_OPTIONS=--import): appends to
// $MODULE_LOG the URL of every ES module import of an @opentelemetry package, so a test can
// tell which of them the process loaded.
import { register } from "node:module";

register(new URL("data:text/javascript," + encodeURIComponent(`
import fs from "node:fs";
let file;
export function initialize(data) { file = data.file; }
export async function resolve(specifier, context, next) {
  const resolved = await next(specifier, context);
  if (file && resolved.url.includes("/@opentelemetry/")) fs.appendFileSync(file, resolved.url + "\\n");
  return resolved;
}
`)), { data: { file: process.env.MODULE_LOG } });
