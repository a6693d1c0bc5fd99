// Shared by the deployment, rollout and rollback tests: application versions imported into
// a tenant's catalog through the real manifest admission and import code (the registry
// transport is tested by the registry suites), a fleet of agents enrolled over the real
// protocol, and the agent's side of a heartbeat (desired state in, progress out).
import crypto from "node:crypto";
import { expect } from "vitest";
import type { Harness } from "../../support/harness.js";
import { parseManifest, manifestDigest } from "../../../src/modules/applications/manifest/index.js";
import { ingestManifests } from "../../../src/modules/applications/ingest.js";
import { createEnrollmentToken, enroll, ensureCa, heartbeat, type EnrolledDevice } from "../agent/fleet-support.js";

export interface AppVersionSpec {
  appKey?: string;
  version: string;
  /** architectures the profile supports (none: every architecture) */
  architectures?: string[];
  /** extra YAML under `parameters:` (indented by two spaces) */
  parametersYaml?: string;
  /** a second component `os`: a system image (a RAUC bundle) at this repository with this digest */
  systemImage?: { repository: string; digest: string };
  /** the system image is the profile's only component (no compose package) */
  systemImageOnly?: boolean;
}

export const DEFAULT_PARAMETERS_YAML = `  pollSeconds:
    value: 30
    schema: { minimum: 5, maximum: 3600 }
    targets: [{ pointer: POLL_SECONDS, components: [gateway] }]
  mode:
    value: fast
    schema: { enum: [fast, safe] }
    targets: [{ pointer: MODE, components: [gateway] }]
  apiToken:
    secret: true
    required: true
    schema: { type: string, maxLength: 100 }
    targets: [{ pointer: API_TOKEN, components: [gateway] }]
`;

export function manifestYaml(spec: AppVersionSpec): string {
  const archs = spec.architectures ? `\n    requiredResources:\n      cpu: { cores: 1, architectures: [${spec.architectures.join(", ")}] }` : "";
  return `apiVersion: fleet.app/v1alpha1
kind: ApplicationManifest
metadata:
  id: ${spec.appKey ?? "vision-gateway"}
  name: Vision Gateway
  version: ${spec.version}
  catalog: { category: vision }
deploymentProfiles:
  - id: compose-main
    type: compose
    components:${spec.systemImageOnly ? "" : `
      - name: gateway
        properties:
          repository: oci://registry.example/apps/gateway
          revision: ${spec.version}`}${spec.systemImage ? `
      - name: os
        properties:
          type: system-image
          repository: ${spec.systemImage.repository}
          revision: ${spec.version}
          digest: ${spec.systemImage.digest}` : ""}${archs}
parameters:
${spec.parametersYaml ?? DEFAULT_PARAMETERS_YAML}`;
}

/** Imports one version (admission + import, as a registry sync does); returns the application id. */
export async function importVersion(h: Harness, organizationId: string, spec: AppVersionSpec): Promise<string> {
  const text = manifestYaml(spec);
  const parsed = parseManifest(text, `apps/${spec.appKey ?? "vision-gateway"}/${spec.version}/app.yaml`);
  if (parsed.kind !== "admitted") throw new Error(`fixture manifest not admitted: ${JSON.stringify(parsed)}`);
  await h.services.prisma.$transaction((tx) =>
    ingestManifests(tx, organizationId, { type: "git", registryId: crypto.randomUUID(), revision: "fixture" }, [
      { path: parsed.path, manifest: parsed.manifest, warnings: parsed.warnings, digest: manifestDigest(text), icon: null },
    ]),
  );
  const app = await h.services.prisma.application.findFirstOrThrow({ where: { organizationId, appKey: spec.appKey ?? "vision-gateway" } });
  return app.id;
}

/** Enrolls `count` agents over the real protocol, reporting `arch`, with `labels`. */
export async function enrollFleet(h: Harness, key: string, count: number, opts: { arch?: string; labels?: Record<string, string> } = {}): Promise<EnrolledDevice[]> {
  await ensureCa(h, key).catch(() => undefined);
  const token = await createEnrollmentToken(h, key, { labels: opts.labels ?? {}, maxUses: count + 10 });
  const devices: EnrolledDevice[] = [];
  // A few at a time: realistic, and quick enough.
  for (let i = 0; i < count; i += 10) {
    const chunk = await Promise.all(
      Array.from({ length: Math.min(10, count - i) }, () => enroll(h, token.token, { facts: { arch: opts.arch ?? "arm64", os: "linux" } })),
    );
    devices.push(...chunk);
  }
  return devices;
}

export interface DesiredEntry {
  deploymentId: string;
  action: "install" | "remove";
  applicationId: string;
  version: string;
  profile: { id: string; type: string; components: Array<{ name: string }> };
  parameters: Record<string, Record<string, unknown>>;
}

/** One heartbeat: sends `reports`, returns the desired state. */
export async function agentHeartbeat(h: Harness, device: EnrolledDevice, reports: Array<{ deploymentId: string; state: string; message?: string; attempt?: number; rolledBackTo?: { deploymentId: string; version: string } }> = []): Promise<DesiredEntry[]> {
  const res = await heartbeat(h, device, reports.length ? { deployments: reports } : {});
  expect(res.status, res.text).toBe(200);
  return res.body.deployments as DesiredEntry[];
}

/** Polls `probe` until it answers something (no fixed sleep: retries fall due within a second or two). */
export async function until<T>(probe: () => Promise<T | undefined>, what: string, ms = 15_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const got = await probe();
    if (got !== undefined) return got;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
