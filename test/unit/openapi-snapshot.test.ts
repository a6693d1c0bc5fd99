// The OpenAPI document is a contract with every client: it changes only on purpose. This
// compares the generated document byte for byte with the committed test/fixtures/openapi.json.
import fs from "node:fs";
import { expect, it } from "vitest";
import { OPENAPI_FIXTURE, currentOpenApiText } from "../support/openapi-snapshot.js";

it("generates exactly the committed OpenAPI document", () => {
  const committed = fs.readFileSync(OPENAPI_FIXTURE, "utf8");
  const current = currentOpenApiText();
  if (current === committed) return;
  // Name the first differing line: the whole document is too long to be a useful diff here.
  const now = current.split("\n");
  const then = committed.split("\n");
  const line = now.findIndex((text, i) => text !== then[i]);
  const at = line === -1 ? then.length : line;
  expect.fail(
    "openapi.json differs from test/fixtures/openapi.json at line " + (at + 1) + ":\n" +
      `  committed: ${then[at] ?? "(end of file)"}\n  generated: ${now[at] ?? "(end of file)"}\n` +
      "If this change of the REST surface is intended, run `npm run openapi:snapshot` and commit the fixture.",
  );
});
