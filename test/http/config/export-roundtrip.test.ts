// Export round trip (docs/config-as-code.md): resources created through the API with
// generated fields (fast-check), exported as documents, and the export planned again: every
// resource answers "unchanged" (with adopt, as they are not managed yet), and after it was
// applied, a plain plan of a fresh export too. A difference between what the export writes,
// what the schemas read and what the services store shows up as an update here.
import fc from "fast-check";
import { parseAllDocuments } from "yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { importVersion } from "../deployments/support.js";
import { PARAMETERS_YAML } from "./support.js";

let h: Harness;
let acme: Tenant;
let appId: string;
let run = 0;


beforeAll(async () => {
  h = await createHarness({ SMTP_URL: "smtp://127.0.0.1:2525" }); // e-mail targets need one configured; nothing is sent
  acme = await h.createTenant("Acme Round Trip");
  appId = await importVersion(h, acme.org.id, { version: "1.0.0", parametersYaml: PARAMETERS_YAML });
  await importVersion(h, acme.org.id, { version: "1.1.0", parametersYaml: PARAMETERS_YAML });
});

afterAll(async () => {
  await h?.close();
});

const word = fc.stringMatching(/^[a-z][a-z0-9]{1,8}$/);
const text = fc.stringMatching(/^[A-Za-z][A-Za-z0-9 ,.]{0,30}[a-z]$/);
const labels = fc.dictionary(word, word, { minKeys: 1, maxKeys: 3 });
const maybe = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: undefined });
const strip = (o: Record<string, unknown>) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));

const role = fc.record({
  description: maybe(text),
  permissions: fc.subarray(["devices:read", "alerts:read", "alerts:write", "deployments:read", "telemetry:read"], { minLength: 1 }),
});
const condition = fc.oneof(
  fc.record({ type: fc.constant("metric_threshold"), metric: fc.constantFrom("cpuUsagePercent", "memoryUsagePercent"), operator: fc.constantFrom(">", "<=", "=="), threshold: fc.integer({ min: 0, max: 100 }), durationSeconds: maybe(fc.integer({ min: 0, max: 3600 })) }).map(strip),
  fc.record({ type: fc.constant("device_offline"), durationSeconds: fc.integer({ min: 60, max: 86_400 }) }),
  fc.record({ type: fc.constant("deployment_failed") }),
  fc.record({ type: fc.constant("certificate_expiring"), withinDays: fc.integer({ min: 1, max: 90 }) }),
);
const rule = fc.record({
  description: maybe(text),
  condition, labelSelector: maybe(labels), severity: maybe(fc.constantFrom("info", "warning", "critical")),
  cooldownSeconds: maybe(fc.integer({ min: 0, max: 86_400 })), enabled: maybe(fc.boolean()),
});
const target = fc.oneof(
  fc.record({ type: fc.constant("email"), recipients: fc.uniqueArray(word.map((w) => `${w}@example.test`), { minLength: 1, maxLength: 3 }), enabled: maybe(fc.boolean()) }),
  fc.record({ type: fc.constant("slack"), url: fc.constant("http://127.0.0.1:9/slack"), enabled: maybe(fc.boolean()) }),
);
const git = fc.record({
  url: word.map((w) => `https://git.example.test/${w}.git`), branch: maybe(fc.constantFrom("main", "release/v2", "dev")),
  path: maybe(fc.constantFrom("/", "apps", "./deploy/")), syncIntervalMinutes: maybe(fc.integer({ min: 0, max: 10_080 })), enabled: maybe(fc.boolean()),
});
const oci = fc.record({
  description: maybe(text), url: word.map((w) => `https://${w}.example.test/`),
  repositories: maybe(fc.uniqueArray(fc.tuple(word, word).map(([a, b]) => `${a}/${b}`), { maxLength: 3 })),
  verifyTls: maybe(fc.boolean()), enabled: maybe(fc.boolean()), syncIntervalMinutes: maybe(fc.integer({ min: 0, max: 10_080 })),
});
const share = fc.oneof(fc.record({ count: fc.integer({ min: 1, max: 50 }) }), fc.record({ percent: fc.integer({ min: 1, max: 100 }) }));
const deployment = fc.record({
  description: maybe(text),
  version: fc.constantFrom("1.0.0", "1.1.0"),
  parameters: maybe(fc.record({ pollSeconds: maybe(fc.integer({ min: 5, max: 3600 })), mode: maybe(fc.constantFrom("fast", "safe")) }).map(strip)),
  target: labels.map((labelSelector) => ({ labelSelector })),
  strategy: maybe(fc.oneof(
    fc.constant({ type: "all-at-once" }),
    fc.record({ type: fc.constant("staged"), canary: share, batches: maybe(fc.array(share, { maxLength: 3 })), autoAdvance: maybe(fc.boolean()) }).map(strip),
  )),
  retry: maybe(fc.record({ maxAttempts: fc.integer({ min: 1, max: 20 }), initialDelaySeconds: fc.integer({ min: 1, max: 60 }), maxDelaySeconds: fc.integer({ min: 60, max: 3600 }) })),
  continuous: maybe(fc.boolean()),
  disruptionBudget: maybe(fc.record({ maxUnavailable: share })),
});

async function create(path: string, body: Record<string, unknown>) {
  const res = await h.api("POST", `/api/v1/${path}`, { key: acme.key, body: strip(body) });
  expect(res.status, `${path}: ${res.text}`).toBe(201);
}

describe("export round trip", () => {
  it("plans its own export as unchanged, for generated resources of every kind", async () => {
    await fc.assert(
      fc.asyncProperty(role, rule, target, git, oci, deployment, async (r, a, t, g, o, d) => {
        const n = ++run;
        await create("roles", { ...r, name: `role-${n}` });
        await create("notification-targets", { ...t, name: `target-${n}` });
        await create("alert-rules", { ...a, name: `rule-${n}` });
        await create("registries/git", { ...g, name: `git-${n}` });
        await create("registries/oci", { ...o, name: `oci-${n}` });
        await create("deployments", { ...d, name: `deploy-${n}`, applicationId: appId, profileId: "compose-main" });

        const exported = await h.api("GET", `/api/v1/organizations/${acme.org.id}/config/export`, { key: acme.key });
        expect(exported.status, exported.text).toBe(200);
        const files = [{ path: "export.yaml", content: exported.body.documents }];
        const planned = await h.api("POST", `/api/v1/organizations/${acme.org.id}/config/plan`, { key: acme.key, body: { files, adopt: true } });
        expect(planned.status, planned.text).toBe(200);
        const notUnchanged = planned.body.resources.filter((e: { action: string }) => e.action !== "unchanged");
        expect(notUnchanged, exported.body.documents).toEqual([]);
        expect(planned.body.summary.unchanged).toBe(exported.body.count);
        expect(exported.body.count).toBe(6 * n);

        // The export holds what was created (the fields given; secrets and the Slack URL never).
        const specs = new Map(parseAllDocuments(exported.body.documents).map((doc) => {
          const v = doc.toJS() as { kind: string; metadata: { name: string }; spec: Record<string, unknown> };
          return [`${v.kind}/${v.metadata.name}`, v.spec];
        }));
        const { url: _slackUrl, ...targetFields } = t as Record<string, unknown>;
        const expected: Array<[string, Record<string, unknown>]> = [
          [`Role/role-${n}`, { ...r, permissions: [...r.permissions].sort() }],
          [`NotificationTarget/target-${n}`, targetFields],
          [`AlertRule/rule-${n}`, a],
          [`GitRegistry/git-${n}`, { ...g, path: g.path === undefined ? undefined : g.path === "/" ? "/" : `/${g.path.replace(/^\.\//, "").replace(/\/$/, "")}` }],
          [`OciRegistry/oci-${n}`, { ...o, url: o.url.replace(/\/$/, ""), repositories: o.repositories && [...o.repositories].sort() }],
          [`Deployment/deploy-${n}`, d],
        ];
        for (const [key, fields] of expected) expect(specs.get(key), key).toMatchObject(strip(fields));
      }),
      { numRuns: 12 },
    );
  }, 240_000);

  it("applied with adopt, a fresh export plans unchanged without adopt, and carries the owner marks", async () => {
    const first = await h.api("GET", `/api/v1/organizations/${acme.org.id}/config/export`, { key: acme.key });
    const adopted = await h.api("POST", `/api/v1/organizations/${acme.org.id}/config/apply`, {
      key: acme.key, body: { files: [{ path: "export.yaml", content: first.body.documents }], adopt: true, commit: "feedbeef" },
    });
    expect(adopted.status, adopted.text).toBe(200);
    expect(adopted.body.summary.unchanged).toBe(first.body.count);
    const again = await h.api("GET", `/api/v1/organizations/${acme.org.id}/config/export`, { key: acme.key });
    expect(again.body.documents).toContain(`# managed by apply:${acme.user.email}`);
    expect(again.body.documents).toContain("at feedbeef");
    const planned = await h.api("POST", `/api/v1/organizations/${acme.org.id}/config/plan`, {
      key: acme.key, body: { files: [{ path: "export.yaml", content: again.body.documents }] },
    });
    expect(planned.body.summary).toMatchObject({ unchanged: first.body.count, create: 0, update: 0, refused: 0, exists_unmanaged: 0 });
    expect(await h.services.prisma.deployment.count({ where: { organizationId: acme.org.id, managedCommit: "feedbeef" } })).toBe(first.body.count / 6);
  });
});
