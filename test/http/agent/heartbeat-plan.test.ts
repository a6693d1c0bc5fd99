// The heartbeat statement finds each device by its primary key, whatever the statistics say.
// A fleet enrolled in the last minute sits in a table autovacuum has not analyzed yet; with
// the organization joined by "=", PostgreSQL then planned to read every device of the
// organization for each heartbeat (4 times the database's CPU per heartbeat, measured on
// 1,000 devices: docs/benchmarks.md, "The heartbeat statement's plan"). Checked on the plan the
// service runs: the prepared statement's generic plan, on a table never analyzed.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness } from "../../support/harness.js";
import { HEARTBEAT_STATEMENT } from "../../../src/modules/agent/heartbeat.js";

const ORG = "00000000-0000-4000-8000-00000000a001";
const DEVICES = 400;
const deviceId = (i: number) => `00000000-0000-4000-8001-${String(i).padStart(12, "0")}`;

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
  const raw = h.services.database.opened.raw;
  await raw.query(`INSERT INTO "Organization" ("id", "name", "slug", "updatedAt") VALUES ($1, 'Plan', 'plan', now())`, [ORG]);
  await raw.query(
    `INSERT INTO "Device" ("id", "organizationId", "name", "reportedDeviceId", "activeClaim", "status", "labels", "createdAt", "updatedAt")
     SELECT ('00000000-0000-4000-8001-' || lpad(i::text, 12, '0'))::uuid, $1::uuid, 'd' || i, 'd' || i, 'd' || i, 'online', '{}', now(), now()
       FROM generate_series(1, ${DEVICES}) i`,
    [ORG],
  );
  await raw.query(
    `INSERT INTO "DeviceCertificate" ("id", "organizationId", "deviceId", "issuerKey", "serialNumber", "fingerprint", "subject", "issuer", "keyAlgorithm", "notBefore", "notAfter", "certificatePem")
     SELECT gen_random_uuid(), $1::uuid, ('00000000-0000-4000-8001-' || lpad(i::text, 12, '0'))::uuid, 'k', i::text, 'fp' || i, 's', 'i', 'EC',
            now() - interval '1 day', now() + interval '300 days', 'pem'
       FROM generate_series(1, ${DEVICES}) i`,
    [ORG],
  );
});
afterAll(() => h?.close());

interface PlanNode {
  "Node Type": string;
  "Relation Name"?: string;
  "Index Name"?: string;
  Plans?: PlanNode[];
}
const nodesOf = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(nodesOf)];

describe("the heartbeat statement's plan", () => {
  it("reads each device of the batch by its primary key on a table never analyzed", async () => {
    const rows = Array.from({ length: 17 }, (_, k) => ({
      i: k, device: deviceId(k + 1), org: ORG, fingerprint: `fp${k + 1}`, status: "online", reason: null, os: null, arch: null,
      agentVersion: null, hardwareModel: null, ipAddress: null, facts: null,
    }));
    const plan = await h.services.database.opened.raw.session(async (db) => {
      await db.exec(`SET plan_cache_mode = force_generic_plan`);
      await db.query(`PREPARE plan_check(text) AS ${HEARTBEAT_STATEMENT}`);
      try {
        // EXPLAIN EXECUTE takes no bind parameter: the batch goes in as a literal
        const literal = `'${JSON.stringify(rows).replaceAll("'", "''")}'`;
        const [explained] = await db.query<{ "QUERY PLAN": [{ Plan: PlanNode }] | string }>(`EXPLAIN (FORMAT JSON) EXECUTE plan_check(${literal})`);
        const text = explained["QUERY PLAN"];
        return (typeof text === "string" ? JSON.parse(text) : text)[0].Plan as PlanNode;
      } finally {
        await db.exec(`DEALLOCATE plan_check; RESET plan_cache_mode`);
      }
    });
    const deviceScans = nodesOf(plan).filter((n) => n["Relation Name"] === "Device" && n["Node Type"].endsWith("Scan"));
    expect(deviceScans.length).toBeGreaterThan(0);
    expect(deviceScans.map((n) => `${n["Node Type"]} ${n["Index Name"] ?? ""}`.trim())).toEqual(deviceScans.map(() => "Index Scan Device_pkey"));
    // configuration (docs/configuration.md): a device without any costs an index probe of the
    // organization's layers and one of its own state row's key, never a scan
    const configScans = nodesOf(plan).filter((n) => ["ConfigLayer", "DeviceConfigState"].includes(n["Relation Name"] ?? ""));
    expect(configScans.length).toBeGreaterThan(0);
    expect(configScans.filter((n) => n["Node Type"] === "Seq Scan")).toEqual([]);
    // a layer's rollout (docs/configuration.md, "Rollout"): the organization's live rollouts by
    // ActionJob(organizationId, kind, state), the device's action by DeviceAction(jobId, deviceId)
    const rolloutScans = nodesOf(plan).filter((n) => n["Relation Name"] === "ActionJob");
    expect(rolloutScans.length).toBeGreaterThan(0);
    expect(rolloutScans.map((n) => `${n["Node Type"]} ${n["Index Name"] ?? ""}`.trim())).toEqual(rolloutScans.map(() => "Index Scan ActionJob_organizationId_kind_state_idx"));
    // and the statement still writes: every row of the batch answered
    const written = await h.services.database.opened.raw.query<{ i: number }>(HEARTBEAT_STATEMENT, [JSON.stringify(rows)]);
    expect(written.map((r) => r.i).sort((a, b) => a - b)).toEqual(rows.map((r) => r.i));
  });
});
