// Two registry syncs of one organization importing the same application version at the same
// moment: imports take turns (an advisory lock per organization's catalog), so the second sees
// what the first committed instead of failing on the unique key (before: a 503 and a retry).
import crypto from "node:crypto";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { ingestManifests } from "../../../src/modules/applications/ingest.js";
import { manifestDigest, parseManifest } from "../../../src/modules/applications/manifest/index.js";
import { manifestYaml } from "../deployments/support.js";

let h: Harness;
let acme: Tenant;

beforeAll(async () => {
  h = await createHarness();
  acme = await h.createTenant("Acme Concurrent Import");
});

afterAll(async () => {
  await h?.close();
});

it("imports the same new application from two concurrent syncs once, without an error", async () => {
  const text = manifestYaml({ appKey: "twice", version: "1.0.0", parametersYaml: "  {}\n" });
  const parsed = parseManifest(text, "twice/app.yaml");
  if (parsed.kind !== "admitted") throw new Error("fixture not admitted");
  const item = { path: parsed.path, manifest: parsed.manifest, warnings: parsed.warnings, digest: manifestDigest(text), icon: null };
  const sync = () =>
    h.services.prisma.$transaction(async (tx) => {
      const outcome = await ingestManifests(tx, acme.org.id, { type: "git", registryId: crypto.randomUUID(), revision: "r1" }, [item]);
      // hold the transaction open a little, as a sync writing its record and audit entry does
      await tx.$executeRaw`SELECT pg_sleep(0.2)`;
      return outcome;
    });
  const outcomes = await Promise.all([sync(), sync()]);
  expect(outcomes.map((o) => o.imported).sort()).toEqual([0, 1]);
  expect(outcomes.flatMap((o) => o.errors)).toEqual([]);
  expect(await h.services.prisma.application.count({ where: { organizationId: acme.org.id, appKey: "twice" } })).toBe(1);
  expect(await h.services.prisma.applicationVersion.count({ where: { organizationId: acme.org.id, version: "1.0.0" } })).toBe(1);
});
