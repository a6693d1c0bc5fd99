// The setup the deployment benchmarks share (bench/continuous.ts, bench/budget.ts): an
// in-process service on its own data directory (PGlite, or PostgreSQL by URL), one application
// version imported through the real admission and import code, devices inserted in one
// statement (no enrollment: the benchmarks measure what happens after it), and a REST helper
// with the admin key.
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { loadConfig } from "../../src/config.js";
import { createLogger } from "../../src/lib/logger.js";
import { startService } from "../../src/server.js";
import { parseManifest, manifestDigest } from "../../src/modules/applications/manifest/index.js";
import { ingestManifests } from "../../src/modules/applications/ingest.js";
import { JsonClient } from "../../agent/src/core/json-client.js";
import { benchServiceEnv } from "./service-env.js";

const ADMIN_KEY = "fm_bench" + "D".repeat(36);

function manifestOf(appKey: string): string {
  return `apiVersion: fleet.app/v1alpha1
kind: ApplicationManifest
metadata:
  id: ${appKey}
  name: ${appKey}
  version: 1.0.0
  catalog: { category: bench }
deploymentProfiles:
  - id: compose-main
    type: compose
    components:
      - name: gateway
        properties:
          repository: oci://registry.example/apps/gateway
          revision: 1.0.0
parameters: {}
`;
}

export type DeploymentBench = Awaited<ReturnType<typeof openDeploymentBench>>;

/** Starts the service and imports `appKey` 1.0.0 (profile compose-main) into the default organization. */
export async function openDeploymentBench(appKey: string, databaseUrl?: string) {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), `fleet-bench-${appKey}-`));
  const service = await startService(loadConfig(benchServiceEnv({ dataDir, adminKey: ADMIN_KEY, databaseUrl })), createLogger("warn"));
  const client = new JsonClient(service.url, 4, 600_000);
  const { services } = service;
  const raw = services.database.opened.raw;
  const [org] = await raw.query<{ id: string }>(`SELECT "id" FROM "Organization" WHERE "slug" = 'default'`);
  const manifest = manifestOf(appKey);
  const parsed = parseManifest(manifest, `apps/${appKey}/1.0.0/app.yaml`);
  if (parsed.kind !== "admitted") throw new Error("bench manifest not admitted");
  await services.prisma.$transaction((tx) =>
    ingestManifests(tx, org.id, { type: "git", registryId: crypto.randomUUID(), revision: "bench" }, [
      { path: parsed.path, manifest: parsed.manifest, warnings: parsed.warnings, digest: manifestDigest(manifest), icon: null },
    ]),
  );
  const app = await services.prisma.application.findFirstOrThrow({ where: { organizationId: org.id, appKey } });
  const api = async (method: string, p: string, body?: unknown) => {
    const res = await client.request<any>(method, p, body, { "x-api-key": ADMIN_KEY });
    if (res.status >= 300) throw new Error(`${method} ${p}: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body;
  };
  /** Inserts `count` online arm64 devices named `${prefix}-i`; `labelsSql` is a jsonb expression of i. */
  const insertDevices = async (prefix: string, count: number, labelsSql: string, params: unknown[] = []) => {
    await raw.query(
      `INSERT INTO "Device" ("id", "organizationId", "name", "reportedDeviceId", "activeClaim", "status", "labels", "arch", "os", "lastSeenAt", "createdAt", "updatedAt")
       SELECT gen_random_uuid(), $1::uuid, $2 || '-' || i, $2 || '-' || i, $2 || '-' || i, 'online', ${labelsSql},
              'arm64', 'linux', now() AT TIME ZONE 'UTC', now() AT TIME ZONE 'UTC', now() AT TIME ZONE 'UTC'
         FROM generate_series(1, $3::int) i`,
      [org.id, prefix, count, ...params],
    );
    await raw.exec(`ANALYZE "Device"`);
  };
  const close = async () => {
    client.close();
    await Promise.race([service.stop(), new Promise((r) => setTimeout(r, 30_000))]);
    fs.rmSync(dataDir, { recursive: true, force: true });
  };
  return { services, raw, org, app, api, insertDevices, close };
}
