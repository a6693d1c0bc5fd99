// kill -9 of a real server process (the service's build, PGlite on disk) while it applies a
// large set of documents (docs/config-as-code.md, Apply): the apply is one transaction, so
// after crash recovery the restarted process holds all of the documents' resources or none,
// and the apply that was cut off can be sent again. The kill lands while the apply's
// transaction is open (the embedded database answers nothing else meanwhile: a readiness
// check waits), and the killed request never got its answer.
import fs from "node:fs";
import { describe, expect, it } from "vitest";
import { ADMIN_KEY } from "../../support/harness.js";
import { migratedDataDir } from "../../support/server-process.js";
import { startServerProcess, type ServerProcess } from "../scale-out/processes.js";

const ON_POSTGRES = Boolean(process.env.DATABASE_URL);
const COUNT = 100;

const roles = (prefix: string) => [{
  path: `${prefix}.yaml`,
  content: Array.from({ length: COUNT }, (_, i) =>
    `apiVersion: fleet.app/v1\nkind: Role\nmetadata: { name: ${prefix}-${i} }\nspec:\n  description: role ${i}\n  permissions: [devices:read]\n`).join("---\n"),
}];

async function rolesNamed(p: ServerProcess, orgId: string, prefix: string): Promise<number> {
  const res = await p.api("POST", `/api/v1/organizations/${orgId}/config/plan`, { body: { files: roles(prefix) } });
  expect(res.status, res.text).toBe(200);
  return res.body.summary.unchanged as number; // applied ones plan as unchanged, the others as create
}

describe.skipIf(ON_POSTGRES)("kill -9 during an apply (PGlite on disk; the run without DATABASE_URL)", () => {
  it("leaves all of the documents' resources or none, and the apply can be sent again", async () => {
    const dataDir = migratedDataDir("fleet-fault-apply-");
    const env = { DATA_DIR: dataDir, BOOTSTRAP_API_KEY: ADMIN_KEY, BOOTSTRAP_ADMIN_PASSWORD: "fault-tests-admin-password", JOBS_ENABLED: "false" };
    let first: ServerProcess | null = null;
    let second: ServerProcess | null = null;
    try {
      first = await startServerProcess("apply-first", env, ADMIN_KEY, "migrated");
      const org = await first.api("GET", "/api/v1/organizations/by-slug/default");
      expect(org.status, org.text).toBe(200);
      const orgId = org.body.id as string;

      const started = Date.now();
      const warmup = await first.api("POST", `/api/v1/organizations/${orgId}/config/apply`, { body: { files: roles("warm") } });
      expect(warmup.status, warmup.text).toBe(200);
      const took = Date.now() - started;
      console.log(`apply of ${COUNT} roles: ${took} ms`);

      let answered = false;
      const cut = first.api("POST", `/api/v1/organizations/${orgId}/config/apply`, { body: { files: roles("cut") } })
        .then(() => (answered = true), () => undefined);
      // The apply's transaction holds the embedded database: /readyz (SELECT 1) waits for it. A
      // readiness check left unanswered for 500 ms while the apply is unanswered is the sign
      // that the transaction is open; then kill -9.
      const deadline = Date.now() + 60_000;
      for (;;) {
        expect(answered, "the apply finished before a transaction was seen").toBe(false);
        if (Date.now() > deadline) throw new Error("no open transaction seen");
        const probe = await fetch(`${first.url}/readyz`, { signal: AbortSignal.timeout(500) }).then(() => "answered", () => "waiting");
        if (probe === "waiting" && !answered) break;
        await new Promise((r) => setTimeout(r, 20));
      }
      await first.kill();
      await cut;
      expect(answered).toBe(false);

      second = await startServerProcess("apply-second", env, ADMIN_KEY, "migrated");
      expect(await rolesNamed(second, orgId, "warm")).toBe(COUNT);
      const survived = await rolesNamed(second, orgId, "cut");
      console.log(`after kill -9 mid-apply: ${survived} of ${COUNT} roles`);
      expect([0, COUNT]).toContain(survived);
      const again = await second.api("POST", `/api/v1/organizations/${orgId}/config/apply`, { body: { files: roles("cut") } });
      expect(again.status, again.text).toBe(200);
      expect(await rolesNamed(second, orgId, "cut")).toBe(COUNT);
    } finally {
      await first?.kill();
      await second?.kill();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  }, 300_000);
});
