// npm run openapi:snapshot: rewrites test/fixtures/openapi.json with the document the code
// generates now. Run it when a change of the REST surface is intended, and commit the diff;
// test/unit/openapi-snapshot.test.ts fails on any change that was not.
import fs from "node:fs";
import path from "node:path";
import { OPENAPI_FIXTURE, currentOpenApiText } from "../test/support/openapi-snapshot.js";

const text = currentOpenApiText();
const before = fs.existsSync(OPENAPI_FIXTURE) ? fs.readFileSync(OPENAPI_FIXTURE, "utf8") : undefined;
fs.writeFileSync(OPENAPI_FIXTURE, text);
console.log(`${path.relative(process.cwd(), OPENAPI_FIXTURE)}: ${before === text ? "unchanged" : "rewritten"}`);

// The `fleet` CLI's generated commands come from the same document (cli/src/manifest.ts).
const { compileManifest, manifestText } = await import("../cli/src/manifest.js");
const CLI_OPERATIONS = new URL("../cli/operations.json", import.meta.url);
const operations = manifestText(compileManifest(JSON.parse(text)));
const operationsBefore = fs.existsSync(CLI_OPERATIONS) ? fs.readFileSync(CLI_OPERATIONS, "utf8") : undefined;
fs.writeFileSync(CLI_OPERATIONS, operations);
console.log(`cli/operations.json: ${operationsBefore === operations ? "unchanged" : "rewritten"}`);
